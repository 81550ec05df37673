package rediskit

import (
	"crypto/tls"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// Each field's error names the field; the zero Config with a URL is
// accepted with its defaults.
func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"neither URL nor Databases", Config{}, "URL"},
		{"both URL and Databases", Config{URL: "redis://a", Databases: []Database{{URL: "redis://b"}}}, "URL"},
		{"unknown kind", Config{URL: "redis://a", Kind: Kind(9)}, "Kind"},
		{"multidb kind with a URL", Config{URL: "redis://a", Kind: KindMultiDB}, "Kind"},
		{"cluster kind with Databases", Config{Databases: []Database{{URL: "redis://b"}}, Kind: KindCluster}, "Kind"},
		{"negative detect timeout", Config{URL: "redis://a", DetectTimeout: -1}, "DetectTimeout"},
		{"negative dial timeout", Config{URL: "redis://a", DialTimeout: -1}, "DialTimeout"},
		{"negative read timeout", Config{URL: "redis://a", ReadTimeout: -1}, "ReadTimeout"},
		{"negative write timeout", Config{URL: "redis://a", WriteTimeout: -1}, "WriteTimeout"},
		{"negative durable timeout", Config{URL: "redis://a", DurableTimeout: -1}, "DurableTimeout"},
		{"negative pool size", Config{URL: "redis://a", PoolSize: -1}, "PoolSize"},
		{"unknown read from", Config{URL: "redis://a", ReadFrom: "closest"}, "ReadFrom"},
		{"username without password", Config{URL: "redis://a", Username: "u"}, "Username"},
		{"multidb replica reads", Config{Databases: []Database{{URL: "redis://b"}}, ReadFrom: Replica}, "ReadFrom"},
		{"multidb durable", Config{Databases: []Database{{URL: "redis://b"}}, Durable: true}, "Durable"},
		{"database without URL", Config{Databases: []Database{{Name: "x"}}}, "Databases[0].URL"},
		{"database of NaN weight", Config{Databases: []Database{{URL: "redis://b", Weight: math.NaN()}}}, "Databases[0].Weight"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.cfg.withDefaults()
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field || ce.Package != "rediskit" || !strings.HasPrefix(err.Error(), "rediskit: Config."+tt.field+" ") {
				t.Fatalf("err = %v, want a *ConfigError on %s", err, tt.field)
			}
			if _, err := NewClient(tt.cfg); !errors.As(err, &ce) {
				t.Fatalf("NewClient: %v, want the *ConfigError", err)
			}
		})
	}
	c, err := Config{URL: "redis://a"}.withDefaults()
	if err != nil || c.DetectTimeout != DefaultDetectTimeout || c.Logger == nil {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	if again, err := c.withDefaults(); err != nil || again.DetectTimeout != DefaultDetectTimeout {
		t.Fatalf("withDefaults twice: %+v, %v", again, err)
	}
	c, _ = Config{URL: "redis://a", DetectTimeout: time.Second}.withDefaults()
	if c.DetectTimeout != time.Second {
		t.Fatalf("DetectTimeout set: %v", c.DetectTimeout)
	}
}

// A URL of another kind than Config.Kind, or a TLSConfig with a URL
// without TLS, is refused before anything is dialled (the addresses are
// unroutable: a dial would time out), without the password.
func TestKindMismatchDialsNothing(t *testing.T) {
	tests := []struct {
		url  string
		kind Kind
	}{
		{"redis+sentinel://:s3cret@192.0.2.1:26379/mymaster", KindCluster},
		{"redis+cluster://:s3cret@192.0.2.1:7000,192.0.2.2:7000", KindSentinel},
		{"redis://:s3cret@192.0.2.1:6379", KindSentinel},
		{"unix://:s3cret@/tmp/redis.sock", KindCluster},
		{"redis+cluster://:s3cret@192.0.2.1:7000,192.0.2.2:7000", KindStandalone},
	}
	for _, tt := range tests {
		start := time.Now()
		_, err := NewClientFromURL(tt.url, Config{Kind: tt.kind})
		var ke *KindError
		if !errors.As(err, &ke) || ke.Want != tt.kind || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "xxxxx") {
			t.Errorf("%s as %v: %v, want a *KindError naming the URL without its password", tt.url, tt.kind, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s as %v: %v to refuse: it dialled", tt.url, tt.kind, d)
		}
	}
	_, err := NewClientFromURL("redis://:s3cret@192.0.2.1:6379", Config{TLSConfig: tlsConfigForTest()})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "TLSConfig" || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("TLSConfig with redis://: %v", err)
	}
	_, err = NewClientFromURL("ftp://192.0.2.1", Config{})
	if err == nil || !strings.Contains(err.Error(), "scheme") {
		t.Errorf("unknown scheme: %v", err)
	}
}

func tlsConfigForTest() *tls.Config { return &tls.Config{MinVersion: tls.VersionTLS12} }
