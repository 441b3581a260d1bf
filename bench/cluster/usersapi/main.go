// Command usersapi is the cluster benchmark's workload (bench/cluster): a JSON API in the
// shape of most Go services, standard library only.
//
//	GET /api/v1/users?n=N    the first N users (default 100, at most 5000) of a directory
//	                         loaded at start, as a JSON list (header X-Served-By: the pod's
//	                         hostname): each request copies them,
//	                         derives a per-user ETag (SHA-256), sorts, and encodes with
//	                         encoding/json, allocating as a real handler does (so the
//	                         garbage collector runs under load too)
//	GET /healthz             200 once listening
//	GET /metrics             Prometheus text: request latency histogram and counter, with
//	                         the common names the booster agent finds by itself
//
// Built static (CGO_ENABLED=0): LD_PRELOAD does not reach it, and the tuning that matters
// for it is the Go runtime's (GOMAXPROCS from the CPU limit). Flags: -listen (default
// :8080, or $PORT), -users (directory size, default 5000).
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"time"
)

type Address struct {
	Street  string `json:"street"`
	City    string `json:"city"`
	Country string `json:"country"`
	Zip     string `json:"zip"`
}

type User struct {
	ID        int64             `json:"id"`
	Name      string            `json:"name"`
	Email     string            `json:"email"`
	Active    bool              `json:"active"`
	Roles     []string          `json:"roles"`
	Address   Address           `json:"address"`
	Labels    map[string]string `json:"labels"`
	CreatedAt time.Time         `json:"createdAt"`
	ETag      string            `json:"etag"`
}

type page struct {
	Items []User `json:"items"`
	Total int    `json:"total"`
	Host  string `json:"host"`
}

var (
	firstNames = []string{"Ada", "Brian", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana",
		"Ivan", "Jun", "Kofi", "Lena", "Mateo", "Nia", "Omar", "Priya"}
	lastNames = []string{"Lovelace", "Kernighan", "Wei", "Okafor", "Berg", "Haddad", "Petrov",
		"Sato", "Novak", "Park", "Mensah", "Fischer", "Rossi", "Adeyemi", "Farouk", "Iyer"}
	cities = []string{"Lisbon", "Osaka", "Lagos", "Berlin", "Austin", "Pune", "Lyon", "Quito"}
	roles  = []string{"viewer", "editor", "admin", "billing", "support"}
)

func directory(n int) []User {
	users := make([]User, n)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range users {
		f, l := firstNames[i%len(firstNames)], lastNames[(i/len(firstNames))%len(lastNames)]
		users[i] = User{
			ID:     int64(1000 + i),
			Name:   f + " " + l,
			Email:  fmt.Sprintf("%s.%s.%d@example.com", f, l, i),
			Active: i%7 != 0,
			Roles:  []string{roles[i%len(roles)], roles[(i/3)%len(roles)]},
			Address: Address{Street: fmt.Sprintf("%d Main Street", 1+i%300),
				City: cities[i%len(cities)], Country: "XX", Zip: fmt.Sprintf("%05d", i*37%100000)},
			Labels:    map[string]string{"tier": []string{"free", "pro", "team"}[i%3], "region": cities[(i/2)%len(cities)]},
			CreatedAt: base.Add(time.Duration(i) * time.Hour),
		}
	}
	return users
}

// Upper bounds in seconds, as in the Prometheus client's default buckets.
var bounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
	2.5, 5, 10}

type histogram struct {
	mu     sync.Mutex
	counts []uint64
	sum    float64
	count  uint64
}

func (h *histogram) observe(s float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, b := range bounds {
		if s <= b {
			h.counts[i]++
			break
		}
	}
	h.sum += s
	h.count++
}

func (h *histogram) write(w http.ResponseWriter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	fmt.Fprintln(w, "# TYPE http_request_duration_seconds histogram")
	var cum uint64
	for i, b := range bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "http_request_duration_seconds_bucket{path=\"/api/v1/users\",code=\"200\",le=%q} %d\n",
			strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	fmt.Fprintf(w, "http_request_duration_seconds_bucket{path=\"/api/v1/users\",code=\"200\",le=\"+Inf\"} %d\n", h.count)
	fmt.Fprintf(w, "http_request_duration_seconds_sum{path=\"/api/v1/users\",code=\"200\"} %g\n", h.sum)
	fmt.Fprintf(w, "http_request_duration_seconds_count{path=\"/api/v1/users\",code=\"200\"} %d\n", h.count)
	fmt.Fprintln(w, "# TYPE http_requests_total counter")
	fmt.Fprintf(w, "http_requests_total{path=\"/api/v1/users\",code=\"200\"} %d\n", h.count)
	fmt.Fprintln(w, "# TYPE usersapi_gomaxprocs gauge")
	fmt.Fprintf(w, "usersapi_gomaxprocs %d\n", runtime.GOMAXPROCS(0))
}

func main() {
	listen := ":8080"
	if p := os.Getenv("PORT"); p != "" {
		listen = ":" + p
	}
	flag.StringVar(&listen, "listen", listen, "address to listen on")
	size := flag.Int("users", 5000, "users in the directory")
	flag.Parse()
	host, _ := os.Hostname()
	dir := directory(*size)
	h := &histogram{counts: make([]uint64, len(bounds))}

	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/users", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		n := 100
		if s := r.URL.Query().Get("n"); s != "" {
			v, err := strconv.Atoi(s)
			if err != nil || v < 0 || v > len(dir) {
				http.Error(w, fmt.Sprintf("n must be an integer in [0, %d]", len(dir)), http.StatusBadRequest)
				return
			}
			n = v
		}
		// What a handler does between the store and the wire: copy the rows it returns,
		// derive fields, sort, encode.
		items := make([]User, 0, n)
		for _, u := range dir[:n] {
			sum := sha256.Sum256([]byte(u.Email + u.CreatedAt.String()))
			u.ETag = hex.EncodeToString(sum[:8])
			u.Roles = append([]string(nil), u.Roles...)
			items = append(items, u)
		}
		sort.SliceStable(items, func(i, j int) bool { return items[i].Name < items[j].Name })
		body, err := json.Marshal(page{Items: items, Total: len(dir), Host: host})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Served-By", host)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
		h.observe(time.Since(start).Seconds())
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		h.write(w)
	})
	log.Printf("usersapi on %s (host %s, GOMAXPROCS %d, %d users)", listen, host,
		runtime.GOMAXPROCS(0), len(dir))
	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.ListenAndServe())
}
