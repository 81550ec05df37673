//go:build unix

package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDemoGuardTour(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	d := &demo{out: &out, quick: true}
	if err := d.guardTour(ctx); err != nil {
		t.Fatalf("guardTour: %v\n%s", err, out.String())
	}
	text := out.String()
	t.Log("\n" + text)
	paused := text[strings.Index(text, "Redis paused"):strings.Index(text, "Redis resumed")]
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`GET  /catalog/sku-1 +200 .*from the database \(fallback\)`),
		regexp.MustCompile(`POST /login alice +503 .*login unavailable`),
		regexp.MustCompile(`POST /pay order-2 +503 .*payment unavailable`),
		regexp.MustCompile(`provider calls 1: no charge was started`),
	} {
		if !want.MatchString(paused) {
			t.Errorf("the paused part lacks %v:\n%s", want, paused)
		}
	}
	resumed := text[strings.Index(text, "Redis resumed"):]
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`GET  /catalog/sku-1 +200 .*from Redis`),
		regexp.MustCompile(`POST /login alice +200`),
		regexp.MustCompile(`POST /pay order-3 +200 .*payment pay_`),
	} {
		if !want.MatchString(resumed) {
			t.Errorf("the resumed part lacks %v:\n%s", want, resumed)
		}
	}
}
