package rediskit

import (
	"errors"
	"strings"
	"testing"

	"github.com/rediskit/rediskit/redisurl"
)

// choose: the kind and whether the probe runs, for every URL kind and
// every Config.Kind.
func TestChoose(t *testing.T) {
	tests := []struct {
		url     string
		cfg     Config
		kind    Kind
		probe   bool
		refused bool
	}{
		{"redis://a:6379", Config{}, KindStandalone, true, false},
		{"rediss://a:6379", Config{}, KindStandalone, true, false},
		{"redis://a:6379", Config{NoClusterDetection: true}, KindStandalone, false, false},
		{"redis://a:6379", Config{Kind: KindStandalone}, KindStandalone, false, false},
		{"redis://a:6379", Config{Kind: KindCluster}, KindCluster, true, false},
		{"redis://a:6379", Config{Kind: KindCluster, NoClusterDetection: true}, KindCluster, false, false},
		{"redis://a:6379", Config{Kind: KindSentinel}, 0, false, true},
		{"unix:///tmp/r.sock", Config{}, KindStandalone, false, false},
		{"unix:///tmp/r.sock", Config{Kind: KindStandalone}, KindStandalone, false, false},
		{"unix:///tmp/r.sock", Config{Kind: KindCluster}, 0, false, true},
		{"redis+sentinel://s1,s2/m", Config{}, KindSentinel, false, false},
		{"redis+sentinel://s1,s2/m", Config{Kind: KindSentinel}, KindSentinel, false, false},
		{"redis+sentinel://s1,s2/m", Config{Kind: KindStandalone}, 0, false, true},
		{"redis+cluster://a,b", Config{}, KindCluster, false, false},
		{"redis+cluster://a", Config{}, KindCluster, true, false},
		{"redis+cluster://a", Config{NoClusterDetection: true}, KindCluster, false, false},
		{"redis://a?addr=b", Config{}, KindCluster, false, false},
		{"redis://a?addr=b", Config{Kind: KindStandalone}, 0, false, true},
		{"redis://a", Config{TLSConfig: tlsConfigForTest()}, 0, false, true},
		{"rediss://a", Config{TLSConfig: tlsConfigForTest()}, KindStandalone, true, false},
	}
	for _, tt := range tests {
		u, err := redisurl.Parse(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		p, err := choose(u, &tt.cfg)
		if tt.refused {
			var ke *KindError
			var ce *ConfigError
			if !errors.As(err, &ke) && !errors.As(err, &ce) {
				t.Errorf("%s with Kind %v: %+v, %v; want it refused", tt.url, tt.cfg.Kind, p, err)
			}
			continue
		}
		if err != nil || p.kind != tt.kind || p.probe != tt.probe || p.why == "" {
			t.Errorf("%s with %+v: %+v, %v; want %v, probe %v", tt.url, tt.cfg, p, err, tt.kind, tt.probe)
		}
	}
}

// For any URL and Kind: no panic; a refusal is typed and shows no
// password; a probe only for one TCP seed; the kind is a real one.
func FuzzChoose(f *testing.F) {
	for _, s := range []string{"redis://u:pw@a:1/2", "unix://:pw@/s", "redis+sentinel://:pw@a,b/m", "rediss+cluster://:pw@a",
		"redis://:pw@a?addr=b", "rediss://:pw@[::1]:6380"} {
		for k := range KindMultiDB + 2 {
			f.Add(s, int(k), k%2 == 0)
		}
	}
	f.Fuzz(func(t *testing.T, raw string, kind int, noDetect bool) {
		u, err := redisurl.Parse(raw)
		if err != nil {
			return
		}
		cfg := Config{URL: raw, Kind: Kind(kind), NoClusterDetection: noDetect}
		if _, err := cfg.withDefaults(); err != nil {
			return
		}
		p, err := choose(u, &cfg)
		if err != nil {
			var ke *KindError
			var ce *ConfigError
			if !errors.As(err, &ke) && !errors.As(err, &ce) {
				t.Fatalf("untyped refusal %v", err)
			}
			for _, pw := range []string{u.Password, u.SentinelPassword} {
				if len(pw) > 3 && strings.Contains(err.Error(), pw) {
					t.Fatalf("the refusal %q shows a password", err)
				}
			}
			return
		}
		if p.kind < KindStandalone || p.kind > KindCluster {
			t.Fatalf("kind %v", p.kind)
		}
		if p.probe && (noDetect || u.Kind == redisurl.Unix || u.Kind == redisurl.Sentinel || len(u.Addrs) > 1) {
			t.Fatalf("probe planned for %s (NoClusterDetection %v)", u.Redacted(), noDetect)
		}
		if cfg.Kind != KindAuto && p.kind != cfg.Kind {
			t.Fatalf("Kind %v forced, %v planned", cfg.Kind, p.kind)
		}
	})
}
