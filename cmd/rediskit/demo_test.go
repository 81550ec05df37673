//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// A step that outlasts --timeout is stopped with an error that names the
// flag; an interrupted one (the parent context ended) is not reported as
// a timeout.
func TestDemoStepTimeout(t *testing.T) {
	d := &demo{out: &bytes.Buffer{}}
	blocked := demoStep{"blocked", func(_ *demo, ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}}
	err := runStep(context.Background(), d, blocked, 20*time.Millisecond)
	if err == nil || !errors.Is(err, context.DeadlineExceeded) ||
		!strings.Contains(err.Error(), "the step did not finish within --timeout 20ms") {
		t.Fatalf("runStep past its timeout: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = runStep(ctx, d, blocked, time.Minute)
	if !errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "--timeout") {
		t.Fatalf("runStep interrupted: %v", err)
	}

	quick := demoStep{"quick", func(*demo, context.Context) error { return nil }}
	if err := runStep(context.Background(), d, quick, time.Minute); err != nil {
		t.Fatalf("runStep: %v", err)
	}
}
