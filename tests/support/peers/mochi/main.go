// A mochi-mqtt broker for protobench's MQTT interop tests (see tests/support/mqtt.py).
//
// It listens on 127.0.0.1 only: plain TCP, WebSocket, and with -cert/-key TLS and
// WebSocket over TLS; with -ca those require a client certificate signed by that CA
// (mutual TLS). It counts, as its own truth, every PUBLISH it received and sent and
// every will it published, by the first level of the topic, and the MQTT 5
// properties of the PUBLISH packets it read (topic aliases, user properties, message
// expiry, content type); it writes the counts as JSON to -counts on SIGUSR1 and
// when it stops (SIGTERM).
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

type counts struct {
	Received    map[string]int `json:"received"`
	Sent        map[string]int `json:"sent"`
	Wills       map[string]int `json:"wills"`
	AliasSet    int            `json:"alias_set"`
	Aliased     int            `json:"aliased"`
	UserProps   int            `json:"user_properties"`
	Expiry      int            `json:"message_expiry"`
	ContentType int            `json:"content_type"`
	Connects    int            `json:"connects"`
	mu          sync.Mutex
}

func first(topic string) string {
	return strings.SplitN(topic, "/", 2)[0]
}

type countHook struct {
	mqtt.HookBase
	c *counts
}

func (h *countHook) ID() string { return "protobench-counts" }

func (h *countHook) Provides(b byte) bool {
	switch b {
	case mqtt.OnPacketRead, mqtt.OnPublished, mqtt.OnPacketSent, mqtt.OnWillSent, mqtt.OnSessionEstablished:
		return true
	}
	return false
}

func (h *countHook) OnPacketRead(cl *mqtt.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Type != packets.Publish {
		return pk, nil
	}
	h.c.mu.Lock()
	defer h.c.mu.Unlock()
	if pk.Properties.TopicAliasFlag || pk.Properties.TopicAlias > 0 {
		if pk.TopicName == "" {
			h.c.Aliased++
		} else {
			h.c.AliasSet++
		}
	}
	if len(pk.Properties.User) > 0 {
		h.c.UserProps++
	}
	if pk.Properties.MessageExpiryInterval > 0 {
		h.c.Expiry++
	}
	if pk.Properties.ContentType != "" {
		h.c.ContentType++
	}
	return pk, nil
}

func (h *countHook) OnPublished(cl *mqtt.Client, pk packets.Packet) {
	h.c.mu.Lock()
	h.c.Received[first(pk.TopicName)]++
	h.c.mu.Unlock()
}

func (h *countHook) OnPacketSent(cl *mqtt.Client, pk packets.Packet, b []byte) {
	if pk.FixedHeader.Type == packets.Publish {
		h.c.mu.Lock()
		h.c.Sent[first(pk.TopicName)]++
		h.c.mu.Unlock()
	}
}

func (h *countHook) OnWillSent(cl *mqtt.Client, pk packets.Packet) {
	h.c.mu.Lock()
	h.c.Wills[first(pk.TopicName)]++
	h.c.mu.Unlock()
}

func (h *countHook) OnSessionEstablished(cl *mqtt.Client, pk packets.Packet) {
	h.c.mu.Lock()
	h.c.Connects++
	h.c.mu.Unlock()
}

func (c *counts) write(path string) {
	c.mu.Lock()
	data, err := json.Marshal(c)
	c.mu.Unlock()
	if err != nil {
		log.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		log.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		log.Fatal(err)
	}
}

func loopback(addr string) string {
	if !strings.HasPrefix(addr, "127.") && !strings.HasPrefix(addr, "[::1]") {
		log.Fatalf("refusing to listen on %s: loopback only", addr)
	}
	return addr
}

func main() {
	tcpAddr := flag.String("tcp", "", "plain MQTT listener (127.0.0.1:PORT)")
	wsAddr := flag.String("ws", "", "MQTT over WebSocket listener")
	tlsAddr := flag.String("tls", "", "MQTT over TLS listener (needs -cert, -key)")
	wssAddr := flag.String("wss", "", "MQTT over WebSocket over TLS listener")
	certFile := flag.String("cert", "", "server certificate (PEM)")
	keyFile := flag.String("key", "", "server key (PEM)")
	caFile := flag.String("ca", "", "CA of the client certificates: TLS listeners require one")
	aliasMax := flag.Int("alias-max", 65535, "the Topic Alias Maximum granted to clients")
	countsFile := flag.String("counts", "counts.json", "where the counts are written")
	flag.Parse()

	c := &counts{Received: map[string]int{}, Sent: map[string]int{}, Wills: map[string]int{}}
	level := new(slog.LevelVar)
	level.Set(slog.LevelError)
	server := mqtt.New(&mqtt.Options{
		InlineClient: false,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	})
	server.Options.Capabilities.TopicAliasMaximum = uint16(*aliasMax)
	if err := server.AddHook(new(auth.AllowHook), nil); err != nil {
		log.Fatal(err)
	}
	if err := server.AddHook(&countHook{c: c}, nil); err != nil {
		log.Fatal(err)
	}

	var tlsConfig *tls.Config
	if *certFile != "" {
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			log.Fatal(err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if *caFile != "" {
			pem, err := os.ReadFile(*caFile)
			if err != nil {
				log.Fatal(err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				log.Fatalf("no certificate in %s", *caFile)
			}
			tlsConfig.ClientCAs = pool
			tlsConfig.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	add := func(l listeners.Listener) {
		if err := server.AddListener(l); err != nil {
			log.Fatal(err)
		}
	}
	if *tcpAddr != "" {
		add(listeners.NewTCP(listeners.Config{ID: "tcp", Address: loopback(*tcpAddr)}))
	}
	if *wsAddr != "" {
		add(listeners.NewWebsocket(listeners.Config{ID: "ws", Address: loopback(*wsAddr)}))
	}
	if *tlsAddr != "" {
		add(listeners.NewTCP(listeners.Config{ID: "tls", Address: loopback(*tlsAddr), TLSConfig: tlsConfig}))
	}
	if *wssAddr != "" {
		add(listeners.NewWebsocket(listeners.Config{ID: "wss", Address: loopback(*wssAddr), TLSConfig: tlsConfig}))
	}

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, syscall.SIGUSR1)
	if err := server.Serve(); err != nil {
		log.Fatal(err)
	}
	for sig := range signals {
		if sig == syscall.SIGUSR1 {
			c.write(*countsFile)
			continue
		}
		break
	}
	_ = server.Close()
	c.write(*countsFile)
}
