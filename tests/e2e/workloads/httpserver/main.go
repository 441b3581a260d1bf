// Command httpserver is the end-to-end tests' workload: a static Go HTTP server built into
// the local image booster.local/httpserver:e2e (tests/e2e/cluster/build). It has no
// dependencies outside the standard library and exposes what the tests and the agent need:
//
//	GET /              "hello from <hostname>"
//	GET /healthz       200 once listening (readiness probe)
//	GET /work?ms=N     burns N ms of CPU (load for CPU-limit and benchmark tests)
//	GET /read?path=P   contents of P, restricted to /proc/ and /sys/ (what the pod sees of
//	                   its own sysctls and cgroup)
//	GET /metrics       Prometheus text format: a latency histogram and a request counter,
//	                   and the Go runtime's GC CPU and heap under the names client_golang
//	                   gives them (go_cpu_classes_gc_total_cpu_seconds_total, a counter;
//	                   go_memstats_heap_alloc_bytes, a gauge), read from runtime/metrics,
//	                   which does not stop the world: the agent's goGcCpuShare and
//	                   goHeapBytes
//	GET /slow?ms=N     from now on every GET / waits N ms more (0 ends it): a regression
//	                   injected into a running pod, for the judge's onset tests
//	GET /apiserver?path=P   GET P from the Kubernetes API server the way an in-cluster
//	                   client does (kubernetes Service, service-account token and CA)
//	POST /hook/P       kept (path and body): a webhook receiver for the notifications' tests
//	GET /hooks         every POST /hook/ kept so far, in order: [{"path", "body"}]
//	GET /alloc?kb=N    allocates about N KiB in small pointerful objects and answers a
//	                   short JSON summary: an allocation-heavy handler, whose CPU per
//	                   request the Go GC's settings change (the search's e2e test)
//
// Flags: -listen (default :8080, or $PORT); -live-mb N keeps about N MiB of pointerful
// records alive for the process's life, the heap every GC cycle marks.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Upper bounds in seconds, as in the Prometheus client's default buckets.
var bucketBounds = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10}

// histogram is a cumulative-bucket latency histogram per (path, code) series.
type histogram struct {
	mu     sync.Mutex
	series map[seriesKey]*series
}

type seriesKey struct {
	path string
	code int
}

type series struct {
	counts []uint64 // counts[i]: observations <= bucketBounds[i] (non-cumulative here)
	sum    float64
	count  uint64
}

func (h *histogram) observe(path string, code int, seconds float64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := seriesKey{path, code}
	s := h.series[k]
	if s == nil {
		s = &series{counts: make([]uint64, len(bucketBounds))}
		h.series[k] = s
	}
	for i, b := range bucketBounds {
		if seconds <= b {
			s.counts[i]++
			break
		}
	}
	s.sum += seconds
	s.count++
}

func (h *histogram) write(w http.ResponseWriter) {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]seriesKey, 0, len(h.series))
	for k := range h.series {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].path != keys[j].path {
			return keys[i].path < keys[j].path
		}
		return keys[i].code < keys[j].code
	})
	fmt.Fprintln(w, "# HELP http_request_duration_seconds Time to serve an HTTP request.")
	fmt.Fprintln(w, "# TYPE http_request_duration_seconds histogram")
	for _, k := range keys {
		s := h.series[k]
		labels := fmt.Sprintf("path=%q,code=\"%d\"", k.path, k.code)
		var cum uint64
		for i, b := range bucketBounds {
			cum += s.counts[i]
			fmt.Fprintf(w, "http_request_duration_seconds_bucket{%s,le=%q} %d\n", labels,
				strconv.FormatFloat(b, 'g', -1, 64), cum)
		}
		fmt.Fprintf(w, "http_request_duration_seconds_bucket{%s,le=\"+Inf\"} %d\n", labels, s.count)
		fmt.Fprintf(w, "http_request_duration_seconds_sum{%s} %g\n", labels, s.sum)
		fmt.Fprintf(w, "http_request_duration_seconds_count{%s} %d\n", labels, s.count)
	}
	fmt.Fprintln(w, "# HELP http_requests_total HTTP requests served.")
	fmt.Fprintln(w, "# TYPE http_requests_total counter")
	for _, k := range keys {
		fmt.Fprintf(w, "http_requests_total{path=%q,code=\"%d\"} %d\n", k.path, k.code,
			h.series[k].count)
	}
}

// goRuntimeSeries maps the runtime/metrics the agent reads to client_golang's names for
// them: the GC's CPU estimate (client_golang exports it with
// collectors.WithGoCollectorRuntimeMetrics) and the heap's objects, runtime.MemStats.HeapAlloc
// (its default Go collector's go_memstats_heap_alloc_bytes).
var goRuntimeSeries = []struct {
	sample, name, kind, help string
}{
	{"/cpu/classes/gc/total:cpu-seconds", "go_cpu_classes_gc_total_cpu_seconds_total", "counter",
		"Estimated total CPU time spent performing GC tasks. Sourced from /cpu/classes/gc/total:cpu-seconds."},
	{"/memory/classes/heap/objects:bytes", "go_memstats_heap_alloc_bytes", "gauge",
		"Number of heap bytes allocated and still in use."},
}

// writeGoRuntime writes goRuntimeSeries; a metric this Go release does not have is left out.
func writeGoRuntime(w io.Writer) {
	samples := make([]metrics.Sample, len(goRuntimeSeries)) // per call: Read may run concurrently
	for i, s := range goRuntimeSeries {
		samples[i].Name = s.sample
	}
	metrics.Read(samples)
	for i, s := range goRuntimeSeries {
		var v float64
		switch samples[i].Value.Kind() {
		case metrics.KindFloat64:
			v = samples[i].Value.Float64()
		case metrics.KindUint64:
			v = float64(samples[i].Value.Uint64())
		default:
			continue
		}
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", s.name, s.help, s.name, s.kind, s.name,
			strconv.FormatFloat(v, 'g', -1, 64))
	}
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

// instrument records every request but /metrics itself, labelled by route, not raw URL,
// so the number of series stays bounded.
func instrument(h *histogram, route string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		next(rec, r)
		h.observe(route, rec.code, time.Since(start).Seconds())
	}
}

func burn(d time.Duration) uint64 {
	var x uint64 = 1
	for end := time.Now().Add(d); time.Now().Before(end); {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	return x
}

const saDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// apiserverGet proxies one GET to the API server as an in-cluster client would, so a test
// can check that pods reach it through the `kubernetes` Service with verified TLS.
func apiserverGet(w http.ResponseWriter, r *http.Request) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	ca, err := os.ReadFile(saDir + "/ca.crt")
	if err != nil || host == "" {
		http.Error(w, fmt.Sprintf("not in a cluster: %v", err), http.StatusFailedDependency)
		return
	}
	token, err := os.ReadFile(saDir + "/token")
	if err != nil {
		http.Error(w, err.Error(), http.StatusFailedDependency)
		return
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest(http.MethodGet,
		"https://"+net.JoinHostPort(host, port)+r.URL.Query().Get("path"), nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

func main() {
	listen := ":8080"
	if p := os.Getenv("PORT"); p != "" {
		listen = ":" + p
	}
	flag.StringVar(&listen, "listen", listen, "address to listen on")
	liveMB := flag.Int("live-mb", 0, "MiB of pointerful records kept alive")
	flag.Parse()
	live = keepAlive(*liveMB)

	hostname, _ := os.Hostname()
	h := &histogram{series: map[seriesKey]*series{}}
	mux := http.NewServeMux()
	var delay atomic.Int64 // added to every GET /, in nanoseconds
	mux.HandleFunc("/", instrument(h, "/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		if d := delay.Load(); d > 0 {
			time.Sleep(time.Duration(d))
		}
		fmt.Fprintf(w, "hello from %s\n", hostname)
	}))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms < 0 || ms > 10000 {
			http.Error(w, "ms must be an integer in [0, 10000]", http.StatusBadRequest)
			return
		}
		delay.Store(int64(ms) * int64(time.Millisecond))
		fmt.Fprintf(w, "every GET / now waits %d ms more\n", ms)
	})
	// A webhook receiver (the operator's notifications): POST /hook/<anything> is kept,
	// GET /hooks answers everything kept so far, in arrival order, as JSON.
	var hooksMu sync.Mutex
	type hook struct {
		Path string `json:"path"`
		Body string `json:"body"`
	}
	var hooks []hook
	mux.HandleFunc("/hook/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		hooksMu.Lock()
		hooks = append(hooks, hook{Path: r.URL.RequestURI(), Body: string(body)})
		hooksMu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/hooks", func(w http.ResponseWriter, _ *http.Request) {
		hooksMu.Lock()
		defer hooksMu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		out := hooks
		if out == nil {
			out = []hook{}
		}
		json.NewEncoder(w).Encode(out)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/work", instrument(h, "/work", func(w http.ResponseWriter, r *http.Request) {
		ms, err := strconv.Atoi(r.URL.Query().Get("ms"))
		if err != nil || ms < 0 || ms > 60000 {
			http.Error(w, "ms must be an integer in [0, 60000]", http.StatusBadRequest)
			return
		}
		start := time.Now()
		x := burn(time.Duration(ms) * time.Millisecond)
		fmt.Fprintf(w, "burned %d ms of CPU in %.1f ms wall (%d)\n", ms,
			float64(time.Since(start).Microseconds())/1000, x%10)
	}))
	mux.HandleFunc("/read", instrument(h, "/read", func(w http.ResponseWriter, r *http.Request) {
		p := filepath.Clean(r.URL.Query().Get("path"))
		if !strings.HasPrefix(p, "/proc/") && !strings.HasPrefix(p, "/sys/") {
			http.Error(w, "path must be under /proc/ or /sys/", http.StatusBadRequest)
			return
		}
		data, err := os.ReadFile(p)
		if err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.Write(data)
	}))
	mux.HandleFunc("/apiserver", instrument(h, "/apiserver", apiserverGet))
	mux.HandleFunc("/alloc", instrument(h, "/alloc", func(w http.ResponseWriter, r *http.Request) {
		kb, err := strconv.Atoi(r.URL.Query().Get("kb"))
		if err != nil || kb < 1 || kb > 65536 {
			http.Error(w, "kb must be an integer in [1, 65536]", http.StatusBadRequest)
			return
		}
		fmt.Fprintln(w, allocate(kb))
	}))
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		h.write(w)
		writeGoRuntime(w)
	})

	srv := &http.Server{Addr: listen, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("httpserver on %s (hostname %s)", listen,
		hostname)
	log.Fatal(srv.ListenAndServe())
}

// record is one node of the live heap: pointers the GC follows on every cycle.
type record struct {
	name string
	tags []string
	next *record
}

// live is what keepAlive built: never read, only kept reachable.
var live []*record

// keepAlive builds about mb MiB of linked records (about 96 bytes each with their strings).
func keepAlive(mb int) []*record {
	n := mb << 20 / 96
	out := make([]*record, 0, n)
	var prev *record
	for i := 0; i < n; i++ {
		r := &record{name: strconv.Itoa(i), tags: []string{"a"}, next: prev}
		out = append(out, r)
		prev = r
	}
	return out
}

// item is what an API handler builds per row before encoding.
type item struct {
	ID    int      `json:"id"`
	Label string   `json:"label"`
	Tags  []string `json:"tags"`
	Next  *item    `json:"-"`
}

// allocate builds about kb KiB of short-lived items (about 112 bytes each with their
// strings and slices), encodes a few of them and returns the summary.
func allocate(kb int) string {
	n := kb << 10 / 112
	items := make([]*item, 0, n)
	var prev *item
	for i := 0; i < n; i++ {
		it := &item{ID: i, Label: "item-" + strconv.Itoa(i), Tags: []string{"x", "y"}, Next: prev}
		items = append(items, it)
		prev = it
	}
	head := items
	if len(head) > 8 {
		head = head[:8]
	}
	body, _ := json.Marshal(head)
	return fmt.Sprintf(`{"items": %d, "encoded": %d}`, len(items), len(body))
}
