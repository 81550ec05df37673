//go:build unix

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

func TestRingTour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	d := &demo{out: &out, quick: true}
	if err := d.ringTour(ctx); err != nil {
		t.Fatalf("ringTour: %v\n%s", err, out.String())
	}
	text := out.String()
	t.Logf("\n%s", text)
	for _, want := range []string{
		"demo timings: heartbeat 200ms",
		"alone owns 100 of 100 keys",
		"each key once",
		"owns all 100 keys again",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
