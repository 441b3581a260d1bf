package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

// A server that stalls every request for one second, two seconds into the run: the open
// loop keeps sending on schedule, so the requests due during the stall wait for it and
// their latencies (from when they were due) show it, while their count stays the
// schedule's.
func TestRateCountsAStallFromWhenRequestsWereDue(t *testing.T) {
	var mu sync.Mutex
	began := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if since := time.Since(began); since > 2*time.Second && since < 3*time.Second {
			time.Sleep(3*time.Second - since)
		}
		mu.Unlock()
		body := []byte("ok")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer srv.Close()
	began = time.Now()
	s := rate([]string{"-url", srv.URL + "/", "-rate", "200", "-c", "8", "-d", "4s",
		"-warmup", "0s", "-timeout", "3s"})
	if s.Errors != 0 {
		t.Fatalf("errors: %v", s.ErrorKinds)
	}
	if s.Due < 780 || s.Due > 800 || s.Requests != s.Due {
		t.Fatalf("due %d, answered %d: want every one of the 800 scheduled", s.Due, s.Requests)
	}
	// About a quarter of the requests fell due in the stalled second: the p90 is well into it.
	if s.P90Ms < 100 || s.MaxMs < 800 {
		t.Fatalf("p90 %.1f ms, max %.1f ms: the stall does not show", s.P90Ms, s.MaxMs)
	}
	if s.P50Ms > 50 {
		t.Fatalf("p50 %.1f ms: most requests were not stalled", s.P50Ms)
	}
}

// A server that never keeps up: what is due more than -timeout ago is not sent, so the run
// ends on time and says how much was late.
func TestRateGivesUpOnRequestsDueTooLongAgo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
		w.Header().Set("Content-Length", "0")
	}))
	defer srv.Close()
	start := time.Now()
	s := rate([]string{"-url", srv.URL + "/", "-rate", "200", "-c", "2", "-d", "2s",
		"-warmup", "0s", "-timeout", "500ms"})
	if took := time.Since(start); took > 4*time.Second {
		t.Fatalf("took %v", took)
	}
	// Two connections at 50 ms a request answer about 40 a second of the 200 due; the rest
	// are late (not sent) or ran out of their time (timeout).
	if s.Due < 390 || s.Errors+s.Requests != s.Due || s.Errors < 200 || s.Requests > 120 {
		t.Fatalf("errors %v, answered %d of %d", s.ErrorKinds, s.Requests, s.Due)
	}
}

// With -conn-age the connections are opened again as they age, so pods that come up after
// the run started get new connections; without it each connection lasts the run.
func TestRateOpensConnectionsAgainOnceTheyAreOld(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "0")
	}))
	defer srv.Close()
	args := []string{"-url", srv.URL + "/", "-rate", "100", "-c", "2", "-d", "2s",
		"-warmup", "0s", "-timeout", "1s"}
	kept := rate(args)
	aged := rate(append(args, "-conn-age", "200ms"))
	if kept.Errors != 0 || aged.Errors != 0 {
		t.Fatalf("errors: %v, %v", kept.ErrorKinds, aged.ErrorKinds)
	}
	if kept.Connections != 2 {
		t.Fatalf("%d connections without -conn-age: want the 2 kept for the run", kept.Connections)
	}
	// Two connections over 2 s, each opened again every 200 ms: about 20.
	if aged.Connections < 12 || aged.Connections > 30 {
		t.Fatalf("%d connections with -conn-age 200ms: want about 20", aged.Connections)
	}
	if aged.Requests != aged.Due {
		t.Fatalf("answered %d of %d", aged.Requests, aged.Due)
	}
}

// The closed loop, for comparison: kept-alive connections, one request after the other.
func TestKeepaliveAnswersOnKeptAliveConnections(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	s := keepalive([]string{"-url", srv.URL + "/", "-c", "4", "-d", "1s", "-warmup", "0s"})
	if s.Errors != 0 || s.Requests < 100 || s.Bytes != 2*int64(s.Requests) {
		t.Fatalf("errors %v, %d requests, %d bytes", s.ErrorKinds, s.Requests, s.Bytes)
	}
}
