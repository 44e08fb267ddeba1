// Command whoami is a test server of slowpoke's multi-node test cluster
// (test/kube/multinode.sh): it answers every HTTP request on the address
// given (default :8080) with its host name, the pod's name, so that a test
// sees which replica a Service sent a call to. It is in the pause image
// at /whoami.
package main

import (
	"fmt"
	"net/http"
	"os"
)

func main() {
	addr := ":8080"
	if len(os.Args) > 1 {
		addr = os.Args[1]
	}
	name, _ := os.Hostname()
	err := http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, name)
	}))
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
