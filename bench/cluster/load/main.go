// Command load drives the cluster benchmark (bench/cluster) from the host, standard library
// only, and prints one JSON object.
//
// keepalive: closed loop, -c connections each sending one HTTP/1.1 GET after the other on
// a kept-alive connection for -d (after -warmup, whose requests are not recorded), like
// wrk. Every request's latency is kept (a sorted sample, no bucketing); quantiles are
// nearest-rank. With -balance N the connections are spread evenly over the N pods
// behind the Service (each still goes through it; see -balance).
//
//	load keepalive -url http://10.96.1.2/api/v1/users?n=200 -c 32 -d 20s -warmup 3s
//
// burst: open loop. Every -period, -burst new connections are opened at once, each sends
// one HTTP/1.0 GET and reads the answer to EOF, then closes. Latency runs from the tick
// (the burst's start) to the last byte, so a SYN the server dropped and the client
// retransmitted a second later counts in full; -timeout bounds one exchange (a failure).
//
//	load burst -addr 10.96.1.3:80 -burst 100 -period 250ms -d 20s -timeout 5s
//
// rate: open loop at a fixed arrival rate. Request k is due at start + k/-rate, whatever
// became of the ones before it; -c kept-alive connections take the due requests in order,
// and a request's latency runs from when it was due, not from when a connection was free
// to send it, so a stalled server shows in full instead of slowing the client down with it
// (no coordinated omission). A request still waiting -timeout after it was due is not sent
// and counts as an error "late" (the server fell that far behind); so is one that takes
// longer than -timeout. With -conn-age D a connection is closed after its first answer
// once it is D old and the next request opens a new one, as clients with a connection
// lifetime do: new connections go where the Service sends them now, so pods that came up
// after the run started (a canary, a fresh baseline) get their share; 0 keeps every
// connection for the whole run (unless it fails).
//
//	load rate -url http://10.96.1.2/api/v1/users?n=200 -rate 400 -c 64 -d 20s -warmup 3s
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"sort"
	"strconv"
	"sync"
	"time"
)

type summary struct {
	Mode       string         `json:"mode"`
	Target     string         `json:"target"`
	Seconds    float64        `json:"seconds"`
	Requests   int            `json:"requests"`
	Errors     int            `json:"errors"`
	ErrorKinds map[string]int `json:"error_kinds,omitempty"`
	RPS        float64        `json:"rps"`
	MeanMs     float64        `json:"mean_ms"`
	P50Ms      float64        `json:"p50_ms"`
	P90Ms      float64        `json:"p90_ms"`
	P99Ms      float64        `json:"p99_ms"`
	P999Ms     float64        `json:"p999_ms"`
	MaxMs      float64        `json:"max_ms"`
	// burst only: time to connect (from the tick), quantiles over the connections that
	// connected.
	ConnectP50Ms float64 `json:"connect_p50_ms,omitempty"`
	ConnectP99Ms float64 `json:"connect_p99_ms,omitempty"`
	Attempts     int     `json:"attempts,omitempty"`
	Bytes        int64   `json:"bytes"`
	// keepalive: connections per answering pod (X-Served-By) at the end.
	ConnsPerPod map[string]int `json:"conns_per_pod,omitempty"`
	// rate only: the arrival rate asked for, and the requests due in the measured window.
	TargetRPS float64 `json:"target_rps,omitempty"`
	Due       int     `json:"due,omitempty"`
	// rate only: connections opened over the whole run (warm-up included).
	Connections int `json:"connections,omitempty"`
}

func quantile(sorted []time.Duration, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return float64(sorted[i].Nanoseconds()) / 1e6
}

func fill(s *summary, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var sum time.Duration
	for _, l := range lat {
		sum += l
	}
	s.Requests = len(lat)
	if len(lat) > 0 {
		s.MeanMs = float64(sum.Nanoseconds()) / 1e6 / float64(len(lat))
		s.MaxMs = float64(lat[len(lat)-1].Nanoseconds()) / 1e6
	}
	s.P50Ms, s.P90Ms = quantile(lat, .50), quantile(lat, .90)
	s.P99Ms, s.P999Ms = quantile(lat, .99), quantile(lat, .999)
	if s.Seconds > 0 {
		s.RPS = float64(len(lat)) / s.Seconds
	}
}

func kind(err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	default:
		var oe *net.OpError
		if errors.As(err, &oe) {
			var se *os.SyscallError
			if errors.As(err, &se) {
				return oe.Op + ": " + se.Err.Error() // e.g. "dial: connection refused"
			}
			return oe.Op
		}
		return "other"
	}
}

// readResponse reads one HTTP/1.1 response with a Content-Length body and returns the
// body's length. Chunked bodies are not supported (the benchmark's servers send lengths).
func readResponse(r *bufio.Reader) (int64, error) {
	n, _, err := readResponseFrom(r)
	return n, err
}

// readResponseFrom also returns the X-Served-By header (which pod answered).
func readResponseFrom(r *bufio.Reader) (int64, string, error) {
	var from string
	line, err := r.ReadSlice('\n')
	if err != nil {
		return 0, from, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[9] != '2' {
		return 0, from, fmt.Errorf("bad status line %q", bytes.TrimSpace(line))
	}
	length := int64(-1)
	for {
		line, err = r.ReadSlice('\n')
		if err != nil {
			return 0, from, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		k = bytes.TrimSpace(k)
		switch {
		case bytes.EqualFold(k, []byte("content-length")):
			length, err = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return 0, from, err
			}
		case bytes.EqualFold(k, []byte("x-served-by")):
			from = string(bytes.TrimSpace(v))
		}
	}
	if length < 0 {
		return 0, from, errors.New("response without Content-Length")
	}
	_, err = r.Discard(int(length))
	return length, from, err
}

// target parses -url into the address to dial and the request to send on it.
func target(raw string) (addr string, req []byte, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", nil, false
	}
	addr = u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	req = []byte(fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: booster-bench\r\n\r\n",
		u.RequestURI(), u.Host))
	return addr, req, true
}

// result is one connection's share of a run: its latencies, errors by kind, bytes read and
// (rate) the requests due in the measured window it took.
type result struct {
	lat    []time.Duration
	errs   map[string]int
	nbytes int64
	due    int
	conns  int // connections opened (rate)
}

// merge adds the connections' results into s and fills its quantiles.
func merge(s *summary, results []result) {
	var all []time.Duration
	for _, res := range results {
		all = append(all, res.lat...)
		s.Bytes += res.nbytes
		s.Due += res.due
		s.Connections += res.conns
		for k, v := range res.errs {
			s.ErrorKinds[k] += v
			s.Errors += v
		}
	}
	fill(s, all)
}

func keepalive(args []string) summary {
	fs := flag.NewFlagSet("keepalive", flag.ExitOnError)
	raw := fs.String("url", "", "http://HOST[:PORT]/PATH?QUERY")
	conns := fs.Int("c", 32, "connections")
	dur := fs.Duration("d", 20*time.Second, "measured duration")
	warm := fs.Duration("warmup", 3*time.Second, "unrecorded time before the measurement")
	timeout := fs.Duration("timeout", 10*time.Second, "deadline of one request")
	balance := fs.Int("balance", 0, "if > 0: that many pods answer (X-Served-By); a new "+
		"connection that lands on a pod already holding ceil(c/balance) is closed and dialled "+
		"again, so every pod gets its share of the connections")
	fs.Parse(args)
	addr, req, ok := target(*raw)
	if !ok {
		fmt.Fprintln(os.Stderr, "load keepalive: -url http://HOST[:PORT]/PATH is required")
		os.Exit(2)
	}
	// dial opens one connection and sends a first request (not recorded) to learn which
	// pod holds it; with -balance it retries until the pod has room.
	var bmu sync.Mutex
	perPod := map[string]int{}
	share := 0
	if *balance > 0 {
		share = (*conns + *balance - 1) / *balance
	}
	dial := func() (net.Conn, *bufio.Reader, string, error) {
		for attempt := 0; ; attempt++ {
			c, err := net.DialTimeout("tcp", addr, *timeout)
			if err != nil {
				return nil, nil, "", err
			}
			r := bufio.NewReaderSize(c, 64<<10)
			c.SetDeadline(time.Now().Add(*timeout))
			_, err = c.Write(req)
			var from string
			if err == nil {
				_, from, err = readResponseFrom(r)
			}
			if err != nil {
				c.Close()
				return nil, nil, "", err
			}
			bmu.Lock()
			// A server that does not say who it is cannot be balanced: take the connection.
			if share == 0 || from == "" || perPod[from] < share || attempt >= 200 {
				perPod[from]++
				bmu.Unlock()
				return c, r, from, nil
			}
			bmu.Unlock()
			c.Close()
		}
	}
	type conn struct {
		c    net.Conn
		r    *bufio.Reader
		from string
	}
	pool := make([]conn, *conns)
	for i := range pool {
		c, r, from, err := dial()
		if err != nil {
			fmt.Fprintln(os.Stderr, "load keepalive: connect:", err)
			os.Exit(1)
		}
		pool[i] = conn{c, r, from}
	}
	start := time.Now()
	measureFrom, end := start.Add(*warm), start.Add(*warm+*dur)
	results := make([]result, *conns)
	var wg sync.WaitGroup
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func(res *result, pc conn) {
			defer wg.Done()
			res.lat = make([]time.Duration, 0, 1<<14)
			res.errs = map[string]int{}
			c, r := pc.c, pc.r
			var err error
			for {
				now := time.Now()
				if !now.Before(end) {
					break
				}
				if c == nil {
					if pc.from != "" {
						bmu.Lock()
						perPod[pc.from]--
						bmu.Unlock()
						pc.from = ""
					}
					c, r, pc.from, err = dial()
					if err != nil {
						if !now.Before(measureFrom) {
							res.errs[kind(err)]++
						}
						c = nil
						time.Sleep(10 * time.Millisecond)
						continue
					}
				}
				t0 := time.Now()
				c.SetDeadline(t0.Add(*timeout))
				_, err = c.Write(req)
				var n int64
				if err == nil {
					n, err = readResponse(r)
				}
				t1 := time.Now()
				if err != nil {
					if !t0.Before(measureFrom) && t1.Before(end) {
						res.errs[kind(err)]++
					}
					c.Close()
					c = nil
					continue
				}
				// A request counts when it started in the window and ended in it.
				if !t0.Before(measureFrom) && !t1.After(end) {
					res.lat = append(res.lat, t1.Sub(t0))
					res.nbytes += n
				}
			}
			if c != nil {
				c.Close()
			}
		}(&results[i], pool[i])
	}
	wg.Wait()
	s := summary{Mode: "keepalive", Target: *raw, Seconds: dur.Seconds(), ErrorKinds: map[string]int{},
		ConnsPerPod: perPod}
	merge(&s, results)
	return s
}

func burst(args []string) summary {
	fs := flag.NewFlagSet("burst", flag.ExitOnError)
	addr := fs.String("addr", "", "HOST:PORT")
	n := fs.Int("burst", 100, "connections opened at once per tick")
	period := fs.Duration("period", 250*time.Millisecond, "time between bursts")
	dur := fs.Duration("d", 20*time.Second, "time during which bursts start")
	timeout := fs.Duration("timeout", 5*time.Second, "deadline of one exchange, from its tick")
	path := fs.String("path", "/", "request path")
	fs.Parse(args)
	if *addr == "" {
		fmt.Fprintln(os.Stderr, "load burst: -addr HOST:PORT is required")
		os.Exit(2)
	}
	req := []byte(fmt.Sprintf("GET %s HTTP/1.0\r\nHost: %s\r\n\r\n", *path, *addr))
	var mu sync.Mutex
	var lat, conn []time.Duration
	errs := map[string]int{}
	var nbytes int64
	var wg sync.WaitGroup
	attempts := 0
	start := time.Now()
	for tick := start; tick.Before(start.Add(*dur)); tick = tick.Add(*period) {
		time.Sleep(time.Until(tick))
		for i := 0; i < *n; i++ {
			attempts++
			wg.Add(1)
			go func(tick time.Time) {
				defer wg.Done()
				deadline := tick.Add(*timeout)
				d := net.Dialer{Deadline: deadline}
				c, err := d.Dial("tcp", *addr)
				if err != nil {
					mu.Lock()
					errs["connect_"+kind(err)]++
					mu.Unlock()
					return
				}
				connected := time.Since(tick)
				defer c.Close()
				c.SetDeadline(deadline)
				var got int64
				if _, err = c.Write(req); err == nil {
					got, err = io.Copy(io.Discard, c)
				}
				done := time.Since(tick)
				mu.Lock()
				defer mu.Unlock()
				conn = append(conn, connected)
				if err != nil || got == 0 {
					if err == nil {
						err = io.ErrUnexpectedEOF
					}
					errs[kind(err)]++
					return
				}
				lat = append(lat, done)
				nbytes += got
			}(tick)
		}
	}
	wg.Wait()
	s := summary{Mode: "burst", Target: *addr, Seconds: dur.Seconds(), ErrorKinds: errs,
		Attempts: attempts, Bytes: nbytes}
	for _, v := range errs {
		s.Errors += v
	}
	fill(&s, lat)
	sort.Slice(conn, func(i, j int) bool { return conn[i] < conn[j] })
	s.ConnectP50Ms, s.ConnectP99Ms = quantile(conn, .50), quantile(conn, .99)
	return s
}

func rate(args []string) summary {
	fs := flag.NewFlagSet("rate", flag.ExitOnError)
	raw := fs.String("url", "", "http://HOST[:PORT]/PATH?QUERY")
	perSecond := fs.Float64("rate", 100, "requests per second, due at fixed intervals")
	conns := fs.Int("c", 64, "kept-alive connections that take the due requests")
	dur := fs.Duration("d", 20*time.Second, "measured duration")
	warm := fs.Duration("warmup", 3*time.Second, "unrecorded time before the measurement")
	timeout := fs.Duration("timeout", 5*time.Second, "longest wait from due to answered")
	connAge := fs.Duration("conn-age", 0, "close a connection once it is this old (0: never)")
	fs.Parse(args)
	addr, req, ok := target(*raw)
	if !ok || *perSecond <= 0 || *conns <= 0 || *connAge < 0 {
		fmt.Fprintln(os.Stderr, "load rate: -url http://HOST[:PORT]/PATH, -rate > 0 and -c > 0 are required")
		os.Exit(2)
	}
	interval := time.Duration(float64(time.Second) / *perSecond)
	start := time.Now().Add(100 * time.Millisecond)
	measureFrom, end := start.Add(*warm), start.Add(*warm+*dur)
	total := int(float64(*warm+*dur) / float64(interval))
	// Every due time fits in the queue: the schedule never waits for the connections.
	due := make(chan time.Time, total+1)
	go func() {
		for k := 0; k < total; k++ {
			t := start.Add(time.Duration(k) * interval)
			time.Sleep(time.Until(t))
			due <- t
		}
		close(due)
	}()
	results := make([]result, *conns)
	var wg sync.WaitGroup
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func(res *result) {
			defer wg.Done()
			res.errs = map[string]int{}
			var c net.Conn
			var r *bufio.Reader
			var opened time.Time
			for t := range due {
				measured := !t.Before(measureFrom) && t.Before(end)
				if measured {
					res.due++
				}
				record := func(kind string) {
					if measured {
						res.errs[kind]++
					}
				}
				if time.Since(t) > *timeout {
					record("late")
					continue
				}
				deadline := t.Add(*timeout)
				if c == nil {
					d := net.Dialer{Deadline: deadline}
					nc, err := d.Dial("tcp", addr)
					if err != nil {
						record(kind(err))
						continue
					}
					c, r, opened = nc, bufio.NewReaderSize(nc, 64<<10), time.Now()
					res.conns++
				}
				c.SetDeadline(deadline)
				_, err := c.Write(req)
				var n int64
				if err == nil {
					n, err = readResponse(r)
				}
				if err != nil {
					record(kind(err))
					c.Close()
					c = nil
					continue
				}
				if measured {
					res.lat = append(res.lat, time.Since(t))
					res.nbytes += n
				}
				if *connAge > 0 && time.Since(opened) >= *connAge {
					c.Close()
					c = nil
				}
			}
			if c != nil {
				c.Close()
			}
		}(&results[i])
	}
	wg.Wait()
	s := summary{Mode: "rate", Target: *raw, Seconds: dur.Seconds(), ErrorKinds: map[string]int{},
		TargetRPS: *perSecond}
	merge(&s, results)
	return s
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: load keepalive|burst|rate [flags]")
		os.Exit(2)
	}
	var s summary
	switch os.Args[1] {
	case "keepalive":
		s = keepalive(os.Args[2:])
	case "burst":
		s = burst(os.Args[2:])
	case "rate":
		s = rate(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "usage: load keepalive|burst|rate [flags]")
		os.Exit(2)
	}
	json.NewEncoder(os.Stdout).Encode(s)
}
