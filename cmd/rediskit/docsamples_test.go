//go:build unix

package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/lab"
)

var updateDocs = flag.Bool("update-docs", false, "run the commands and rewrite the output samples in docs/cli.md")

// docSamples names the output samples docs/cli.md holds, each between
// <!-- sample NAME --> and <!-- /sample --> lines.
var docSamples = []string{
	"lab-up", "check", "check-failures", "check-cluster", "probe", "health", "ring", "drill", "cluster-drill", "demo",
}

var sampleBlock = regexp.MustCompile(`(?s)<!-- sample ([a-z-]+) -->\n.*?<!-- /sample -->`)

// TestDocSamples checks that docs/cli.md, the CLI reference, has every
// command's output sample; with -update-docs it runs the commands against labs and
// rewrites the samples with what they printed:
//
//	go test ./cmd/rediskit -run TestDocSamples -update-docs
func TestDocSamples(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "cli.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	found := map[string]bool{}
	for _, m := range sampleBlock.FindAllStringSubmatch(readme, -1) {
		found[m[1]] = true
	}
	for _, name := range docSamples {
		if !found[name] {
			t.Errorf("docs/cli.md has no output sample %q (run go test ./cmd/rediskit -run TestDocSamples -update-docs)", name)
		}
	}
	if !*updateDocs {
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	samples := map[string]string{}
	s := &sampler{t: t, ctx: ctx, env: []string{envPassword + "=" + dataSecret, envSentinelPassword + "=" + sentinelSecret}}

	// lab up, in the foreground until Ctrl-C.
	samples["lab-up"] = s.untilInterrupt("Ctrl-C stops it", "lab", "up", "--replicas", "2", "--sentinels", "3", "--latency", "node2=42")

	l := lab.New(t, lab.Config{Replicas: 2, Sentinels: 3, Password: dataSecret, SentinelPassword: sentinelSecret,
		Nodes: []lab.NodeConfig{{}, {}, {Latency: 42 * time.Millisecond}}})
	url := sentinelURL(l)
	master, replica := l.Node(0).Addr(), l.Node(2).Addr()
	samples["check"] = s.run("check", url, "--write")
	dead := deadAddr(t)
	samples["check-failures"] = s.join(
		s.run("check", "redis://"+replica, "--write"),
		s.runEnv([]string{envPassword + "=wrong"}, "check", "redis://"+master),
		s.run("check", "redis+sentinel://"+dead+","+l.SentinelAddrs()[0]+"/mymaster"),
		s.run("check", strings.Replace(url, "/mymaster", "/shop", 1), "--json"),
	)
	samples["check-cluster"], samples["cluster-drill"] = clusterSamples(t, s)
	samples["probe"] = s.join(
		s.run("probe", url),
		s.untilInterrupt(`round 3 of "mymaster"`, "probe", url, "--watch", "--interval", "500ms"),
	)
	samples["health"] = s.join(
		s.run("health", url, "--write"),
		s.run("health", "redis://"+replica, "--write"),
		s.run("health", "redis://"+master, "--json"),
	)

	ringURL := "redis://" + master
	join := func() *running {
		return startRediskit(t, ctx, s.env, false, "ring", "join", ringURL, "--key", "example-ring", "--items", "12")
	}
	a := join()
	a.waitForLast(t, "owns 12 of 12 items (1 node(s)")
	b := join()
	b.waitForLast(t, "(2 node(s) on the ring)")
	a.waitForLast(t, "(2 node(s) on the ring)")
	printed := s.run("ring", "print", ringURL, "--key", "example-ring")
	owners := s.run("ring", "owner", ringURL, "--key", "example-ring", "3", "7", "account-42")
	b.interrupt(t)
	a.waitForLast(t, "owns 12 of 12 items (1 node(s)")
	a.interrupt(t)
	interrupted := func(out string) string {
		return strings.Replace(strings.TrimRight(out, "\n"), "left ring", "^C\nleft ring", 1)
	}
	samples["ring"] = s.join(
		"$ rediskit ring join "+ringURL+" --key example-ring --items 12     # terminal 1\n"+interrupted(a.out.String()),
		"$ rediskit ring join "+ringURL+" --key example-ring --items 12     # terminal 2\n"+interrupted(b.out.String()),
		printed, owners)

	samples["drill"] = s.run("drill", "--lab", "--failover", "--duration", "6s")
	samples["demo"] = s.run("demo")

	for name, text := range samples {
		assertNoSecrets(t, text)
		block := fmt.Sprintf("<!-- sample %s -->\n```console\n%s\n```\n<!-- /sample -->", name, strings.TrimRight(text, "\n"))
		replaced := false
		readme = sampleBlock.ReplaceAllStringFunc(readme, func(m string) string {
			if sampleBlock.FindStringSubmatch(m)[1] != name {
				return m
			}
			replaced = true
			return block
		})
		if !replaced {
			t.Errorf("docs/cli.md has no block for sample %q", name)
		}
	}
	if err := os.WriteFile(path, []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
}

// clusterSamples are the outputs on a 3×1 lab cluster with a password:
// check's, probe's and health's; then the drill's, with a failover of
// shard 1 under load, and the ring's, two workers on the cluster URL.
func clusterSamples(t *testing.T, s *sampler) (checks, drillRing string) {
	url := clusterURL(lab.New(t, clusterLabConfig()))
	checks = s.join(s.run("check", url, "--write"), s.run("probe", url), s.run("health", url, "--write"))

	drill := s.run("drill", url, "--failover", "--shard", "1", "--duration", "6s")
	join := func() *running {
		return startRediskit(t, s.ctx, s.env, false, "ring", "join", url, "--key", "example-ring", "--items", "12")
	}
	a := join()
	a.waitForLast(t, "owns 12 of 12 items (1 node(s)")
	b := join()
	b.waitForLast(t, "(2 node(s) on the ring)")
	a.waitForLast(t, "(2 node(s) on the ring)")
	owners := s.run("ring", "owner", url, "--key", "example-ring", "3", "7", "account-42")
	b.interrupt(t)
	a.interrupt(t)
	return checks, s.join(drill, owners)
}

// sampler runs the commands of docs/cli.md's samples and formats what they
// printed as a terminal session.
type sampler struct {
	t   *testing.T
	ctx context.Context
	env []string
}

func (s *sampler) run(args ...string) string { return s.runEnv(nil, args...) }

func (s *sampler) runEnv(extra []string, args ...string) string {
	s.t.Helper()
	out, code := rediskit(s.t, s.ctx, append(append([]string{}, s.env...), extra...), args...)
	return s.format(extra, args, out, code)
}

func (s *sampler) format(extra, args []string, out string, code int) string {
	prompt := "$ "
	for _, kv := range extra {
		prompt += kv + " "
	}
	text := prompt + "rediskit " + strings.Join(args, " ") + "\n" + strings.TrimRight(out, "\n")
	if code != 0 {
		text += fmt.Sprintf("\n$ echo $?\n%d", code)
	}
	return text
}

func (s *sampler) join(parts ...string) string { return strings.Join(parts, "\n\n") }

// untilInterrupt runs a command until its output shows until, then
// interrupts it (Ctrl-C).
func (s *sampler) untilInterrupt(until string, args ...string) string {
	s.t.Helper()
	r := startRediskit(s.t, s.ctx, s.env, false, args...)
	r.waitFor(s.t, until)
	// Interrupt once the output is complete: the line, or the table after it.
	time.Sleep(100 * time.Millisecond)
	printed := len(r.output())
	r.interrupt(s.t)
	text := r.output()
	text = strings.TrimRight(text[:printed], "\n") + "\n^C\n" + text[printed:]
	return s.format(nil, args, text, 0)
}
