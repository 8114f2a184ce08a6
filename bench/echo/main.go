// Command echo is protobench's native-speed WebSocket echo server for bench/ws_vs_peers,
// and a plain Go closed-loop echo client used as a reference generator.
//
//	echo serve -addr 127.0.0.1:9001      # echo every message on any path; GET /stats counts them
//	echo load -url ws://127.0.0.1:9001/ -c 20 -d 10s -size 200
//
// serve prints "listening HOST:PORT" on stdout once it accepts connections.
// load prints one JSON object: {"messages": N, "seconds": S, "msg_per_s": R}.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

var echoed atomic.Int64

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: echo serve|load [flags]")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		serve(os.Args[2:])
	case "load":
		load(os.Args[2:])
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q (expected serve or load)\n", os.Args[1])
		os.Exit(2)
	}
}

func serve(args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:9001", "listen address (loopback only)")
	_ = fs.Parse(args)
	upgrader := websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}
	mux := http.NewServeMux()
	mux.HandleFunc("/stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{"messages": echoed.Load()})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		conn, err := upgrader.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer conn.Close()
		for {
			kind, data, err := conn.ReadMessage()
			if err != nil {
				return
			}
			if err := conn.WriteMessage(kind, data); err != nil {
				return
			}
			echoed.Add(1)
		}
	})
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening %s\n", listener.Addr())
	if err := http.Serve(listener, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func load(args []string) {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	url := fs.String("url", "ws://127.0.0.1:9001/", "echo server URL")
	conns := fs.Int("c", 20, "connections, one message in flight each")
	duration := fs.Duration("d", 10*time.Second, "duration")
	size := fs.Int("size", 200, "payload bytes")
	_ = fs.Parse(args)
	payload := bytes.Repeat([]byte("x"), *size)
	var total atomic.Int64
	var failed atomic.Int64
	deadline := time.Now().Add(*duration)
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < *conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, _, err := websocket.DefaultDialer.Dial(*url, nil)
			if err != nil {
				failed.Add(1)
				return
			}
			defer conn.Close()
			var n int64
			for time.Now().Before(deadline) {
				if err := conn.WriteMessage(websocket.BinaryMessage, payload); err != nil {
					failed.Add(1)
					break
				}
				_, reply, err := conn.ReadMessage()
				if err != nil || !bytes.Equal(reply, payload) {
					failed.Add(1)
					break
				}
				n++
			}
			total.Add(n)
		}()
	}
	wg.Wait()
	seconds := time.Since(start).Seconds()
	out, _ := json.Marshal(map[string]any{
		"messages":  total.Load(),
		"failed":    failed.Load(),
		"seconds":   seconds,
		"msg_per_s": float64(total.Load()) / seconds,
	})
	fmt.Println(string(out))
}
