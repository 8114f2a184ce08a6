// A small Go HTTP server with net/http/pprof, for protobench's --pprof test.
//
// Every request spins the CPU for -burn in burnCPU (a function the profile
// must name) and answers "ok". It listens on 127.0.0.1 only, prints its
// port on stdout, and exits when its stdin closes (so it never outlives the test).
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"time"
)

var sink uint64

func burnCPU(d time.Duration) {
	until := time.Now().Add(d)
	for time.Now().Before(until) {
		for i := 0; i < 1000; i++ {
			sink += uint64(i) * 2654435761
		}
	}
}

func main() {
	burn := flag.Duration("burn", 200*time.Microsecond, "CPU spent per request")
	flag.Parse()
	runtime.SetMutexProfileFraction(5)
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		burnCPU(*burn)
		io.WriteString(w, "ok")
	})
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(listener.Addr().(*net.TCPAddr).Port)
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	http.Serve(listener, nil)
}
