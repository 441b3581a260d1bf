// informer-bench (client-go): the baseline for bench/informer. A typed Pod informer with
// the same managedFields-dropping transform as the C++ informer; prints one JSON line per
// phase: after the initial sync and after the churn rounds the driver writes.
//
//	informer-bench -namespace bench -selector app=informer-bench -pods 1000 -rounds 3
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func rssKB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return -1
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "VmRSS:") {
			fields := strings.Fields(s.Text())
			v, _ := strconv.ParseInt(fields[1], 10, 64)
			return v
		}
	}
	return -1
}

func emit(m map[string]any) {
	m["impl"] = "client-go"
	b, _ := json.Marshal(m)
	fmt.Println(string(b))
}

func main() {
	ns := flag.String("namespace", "bench", "namespace of the pods")
	selector := flag.String("selector", "app=informer-bench", "label selector")
	pods := flag.Int("pods", 1000, "pods expected")
	rounds := flag.Int("rounds", 3, "churn rounds to wait for")
	flag.Parse()

	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		panic(err)
	}
	// Same client-side limits as the C++ client's defaults.
	cfg.QPS, cfg.Burst = 20, 30
	cs := kubernetes.NewForConfigOrDie(cfg)
	// The baseline is taken with the client warm (connection, TLS up), as on the C++ side,
	// so that the per-pod figure is the cache's and not the client's.
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), *ns, metav1.GetOptions{}); err != nil {
		panic(err)
	}
	runtime.GC()
	rssBefore := rssKB()

	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(*ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = *selector }))
	inf := factory.Core().V1().Pods().Informer()
	if err := inf.SetTransform(func(obj any) (any, error) {
		if a, ok := obj.(metav1.ObjectMetaAccessor); ok {
			a.GetObjectMeta().SetManagedFields(nil)
		}
		return obj, nil
	}); err != nil {
		panic(err)
	}

	var mu sync.Mutex
	var first, last time.Time
	seen := 0
	want := *pods * *rounds
	done := make(chan struct{})
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// Counts the updates that changed the driver's annotation (not kwok's status
		// writes, which also reach the handler).
		UpdateFunc: func(o, n any) {
			round, ok := n.(*corev1.Pod).Annotations["bench/round"]
			if !ok || round == o.(*corev1.Pod).Annotations["bench/round"] {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			now := time.Now()
			if seen == 0 {
				first = now
			}
			last = now
			seen++
			if seen == want {
				close(done)
			}
		},
	})
	stop := make(chan struct{})
	start := time.Now()
	factory.Start(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		panic("sync failed")
	}
	syncS := time.Since(start).Seconds()
	n := len(inf.GetStore().List())
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rssSynced := rssKB()
	emit(map[string]any{"phase": "synced", "pods": n, "sync_s": syncS, "rss_before_kb": rssBefore,
		"rss_kb": rssSynced, "rss_per_pod_kb": float64(rssSynced-rssBefore) / float64(max(n, 1)),
		"go_heap_inuse_kb": ms.HeapInuse / 1024})
	fmt.Fprintln(os.Stderr, "READY")
	if *rounds == 0 { // a sync-only run
		close(stop)
		return
	}
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
	}
	mu.Lock()
	d := last.Sub(first).Seconds()
	emit(map[string]any{"phase": "churn", "events": seen, "events_per_s": float64(seen) / d,
		"rss_kb": rssKB()})
	mu.Unlock()
	close(stop)
}
