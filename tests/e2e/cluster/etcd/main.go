// Command etcd is the etcd server built from the go.etcd.io/etcd/server/v3 module at the
// version pinned in ../versions.env; the e2e cluster's build step compiles it in a small
// wrapper module so nothing is downloaded as a binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
