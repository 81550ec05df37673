package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunAndPrint(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	url := "redis://" + l.Node(0).Addr()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var out, errs testkit.Buffer
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(wctx, []string{"-redis", url, "-key", "k", "-keys", "10"}, &out, &errs) }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), ", 10 keys ([0 1 2 3 4 5 6 7 8 9])") {
		if time.Now().After(deadline) {
			t.Fatalf("no report of 10 keys:\n%s\n%s", out.String(), errs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	var listing bytes.Buffer
	if err := run(ctx, []string{"-redis", url, "-key", "k", "-print"}, &listing, &errs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(listing.String(), `Hash ring "k" nodes:`) || !strings.Contains(listing.String(), "100.00%        16") {
		t.Errorf("listing:\n%s", listing.String())
	}

	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, []string{"-no-such-flag"}, &out, &errs); err == nil {
		t.Error("a bad flag was accepted")
	}
}

// A malformed -redis URL is refused without showing its password, in the
// error main prints or anywhere else.
func TestBadURLHidesThePassword(t *testing.T) {
	const secret = "hunter2"
	for _, url := range []string{
		"redis://:" + secret + "@[::1",
		"redis://:" + secret + "@[::1]:port",
		"redis://user:" + secret + "@127.0.0.1:6379/notadb",
		"redis://:" + secret + "@127.0.0.1:6379/0?max_retries=5",
		"http://:" + secret + "@[::1",
		"redis+sentinel://:" + secret + "@127.0.0.1/mymaster",
	} {
		var out, errs testkit.Buffer
		err := run(context.Background(), []string{"-redis", url}, &out, &errs)
		if err == nil {
			t.Errorf("-redis %s was accepted", url)
			continue
		}
		for _, text := range []string{err.Error(), out.String(), errs.String()} {
			if strings.Contains(text, secret) {
				t.Errorf("-redis with a bad URL printed the password: %q", text)
			}
		}
		if !strings.Contains(err.Error(), "-redis") {
			t.Errorf("the error does not name the flag: %v", err)
		}
	}
}
