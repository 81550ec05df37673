//go:build unix

package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/rediskit/rediskit/redisurl"
)

// The environment's passwords go on the parsed Config, never into the
// URL's text: an '@' in a query value or a path does not move them there.
func TestParseTargetURLFillsPasswordsFromTheEnvironment(t *testing.T) {
	const pw, spw = "TopSecret99", "Sentinel-Secret 42"
	for _, tc := range []struct {
		raw  string
		want redisurl.Config // only the fields set here are compared
	}{
		{"redis://localhost?clientName=svc@eu",
			redisurl.Config{Addr: "localhost:6379", ClientName: "svc@eu", Password: pw}},
		{"rediss://localhost?caFile=/etc/ssl/me@corp/ca.pem",
			redisurl.Config{Addr: "localhost:6379", CAFile: "/etc/ssl/me@corp/ca.pem", Password: pw}},
		{"unix:///tmp/a@b/redis.sock",
			redisurl.Config{SocketPath: "/tmp/a@b/redis.sock", Password: pw}},
		{"redis://app@10.0.0.5:6380/2",
			redisurl.Config{Addr: "10.0.0.5:6380", DB: 2, Username: "app", Password: pw}},
		{"redis://app:@10.0.0.5",
			redisurl.Config{Addr: "10.0.0.5:6379", Username: "app", Password: pw}},
		{"redis://a%40pp@host?clientName=x@y",
			redisurl.Config{Addr: "host:6379", Username: "a@pp", ClientName: "x@y", Password: pw}},
		{"unix://app@/run/re@dis.sock?db=3",
			redisurl.Config{SocketPath: "/run/re@dis.sock", DB: 3, Username: "app", Password: pw}},
		{"redis://:from-url@host",
			redisurl.Config{Addr: "host:6379", Password: "from-url"}},
		{"redis+sentinel://10.0.0.1,10.0.0.2/mymaster?readFrom=replica",
			redisurl.Config{Sentinels: []string{"10.0.0.1:26379", "10.0.0.2:26379"}, MasterName: "mymaster",
				ReadFrom: redisurl.Replica, Password: pw, SentinelPassword: spw}},
		{"redis+sentinel://app@10.0.0.1/mymaster?sentinelUser=watcher&clientName=c@d",
			redisurl.Config{Sentinels: []string{"10.0.0.1:26379"}, MasterName: "mymaster", ClientName: "c@d",
				Username: "app", Password: pw, SentinelUsername: "watcher", SentinelPassword: spw}},
		{"redis+sentinel://10.0.0.1/mymaster?sentinelUser=w%40tcher",
			redisurl.Config{Sentinels: []string{"10.0.0.1:26379"}, MasterName: "mymaster",
				Password: pw, SentinelUsername: "w@tcher", SentinelPassword: spw}},
		{"redis+sentinel://10.0.0.1/mymaster?sentinelUser=w&sentinelPassword=from-url",
			redisurl.Config{Sentinels: []string{"10.0.0.1:26379"}, MasterName: "mymaster",
				Password: pw, SentinelUsername: "w", SentinelPassword: "from-url"}},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			c, err := parseTargetURL(tc.raw, pw, spw)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			got := redisurl.Config{Addr: c.Addr, SocketPath: c.SocketPath, Sentinels: c.Sentinels, MasterName: c.MasterName,
				DB: c.DB, Username: c.Username, Password: c.Password, SentinelUsername: c.SentinelUsername,
				SentinelPassword: c.SentinelPassword, ClientName: c.ClientName, CAFile: c.CAFile}
			want := tc.want
			if c.Kind == redisurl.Sentinel {
				got.ReadFrom = c.ReadFrom
				if want.ReadFrom == "" {
					want.ReadFrom = redisurl.Master
				}
			}
			if got.Redacted() != want.Redacted() || got.Password != want.Password || got.SentinelPassword != want.SentinelPassword {
				t.Fatalf("parsed %s (password %q, sentinel password %q)\nwant   %s (password %q, sentinel password %q)",
					got.Redacted(), got.Password, got.SentinelPassword, want.Redacted(), want.Password, want.SentinelPassword)
			}
			for _, text := range []string{c.Redacted(), c.String()} {
				if strings.Contains(text, pw) || strings.Contains(text, spw) {
					t.Fatalf("the redacted URL shows a password: %s", text)
				}
			}
		})
	}
}

// Errors keep the environment's passwords out, and a name without a
// password is still an error when the environment has none.
func TestParseTargetURLErrors(t *testing.T) {
	const pw, spw = "TopSecret99", "SentinelSecret42"
	for _, tc := range []struct {
		raw       string
		pw, spw   string
		wantField string
	}{
		{"redis://app@host", "", spw, "userinfo"},
		{"redis+sentinel://h/m?sentinelUser=w", pw, "", "sentinelPassword"},
		{"redis+sentinel://h/m?sentinelUser=w&sentinelUser=v", pw, spw, "sentinelUser"},
		{"redis://localhost?clientName=svc@eu&dialTimeout=soon", pw, spw, "dialTimeout"},
		{"redis://app@host?clientName=svc@eu&dialTimeout=soon", pw, spw, "dialTimeout"},
		{"redis://app@host:notaport", pw, spw, "address"},
		{"rediss://localhost?caFile=/etc/ssl/me@corp/ca.pem&certFile=/c@rt.pem", pw, spw, "keyFile"},
		{"redis+sentinel://h/m?sentinelUser=w@x&readFrom=far", pw, spw, "readFrom"},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			_, err := parseTargetURL(tc.raw, tc.pw, tc.spw)
			var ue *redisurl.Error
			if !errors.As(err, &ue) || ue.Field != tc.wantField {
				t.Fatalf("error %v, want a redisurl error about %s", err, tc.wantField)
			}
			if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), spw) {
				t.Fatalf("the error shows a password: %v", err)
			}
		})
	}

	// A CA file path with an '@' is read as written, and the error of
	// reading it names it without the password.
	c, err := parseTargetURL("rediss://localhost?caFile=/nonexistent/me@corp/ca.pem", pw, spw)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.TLSConfig()
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/me@corp/ca.pem") || strings.Contains(err.Error(), pw) {
		t.Fatalf("TLSConfig: %v, want an error naming /nonexistent/me@corp/ca.pem without the password", err)
	}
}
