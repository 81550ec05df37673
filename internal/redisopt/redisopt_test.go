package redisopt_test

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/lab"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestInner(t *testing.T) {
	o := redisopt.Inner(&redis.Options{Addr: "a:1", MaxRetries: 3, DialerRetries: 5})
	if o.MaxRetries != -1 || o.DialerRetries != 1 || !o.ContextTimeoutEnabled || !o.DisableIdentity ||
		o.MaintNotificationsConfig == nil || o.MaintNotificationsConfig.Mode != maintnotifications.ModeDisabled || o.Addr != "a:1" {
		t.Fatalf("Inner = %+v", o)
	}
}

// Handshake verifies the server against the address's host when the
// config has no ServerName, and fails (closing the connection) otherwise.
func TestHandshake(t *testing.T) {
	files, err := lab.GenerateTLS(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(files.CertFile, files.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			_ = c.Close()
		}
	}()
	client, err := files.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name     string
		addr     string
		cfg      *tls.Config
		wantFail bool
	}{
		{"server name from the address", ln.Addr().String(), client, false},
		{"a host the certificate does not cover", "example.invalid:1", client, true},
	} {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn, err := redisopt.Handshake(ctx, raw, tc.cfg, tc.addr)
		if (err != nil) != tc.wantFail {
			t.Errorf("%s: %v", tc.name, err)
		}
		if conn != nil {
			_ = conn.Close()
		}
		_ = raw.Close()
	}
	if client.ServerName != "" {
		t.Fatal("Handshake changed the caller's config")
	}
	_ = ln.Close()
	<-done
}
