// Command gen writes classify/table_gen.go: it starts a standalone
// redis-server and a standalone valkey-server with the lab package, reads
// each one's COMMAND reply and version, merges them (cmdinfo.Merge: the
// union of the commands, with their arities, flags and key positions;
// where the servers differ, the flags safe on both and the key range safe
// for routing) and renders the result, with the list of differences, as a Go table. Run
// it through go generate in the classify directory:
//
//	go generate ./classify/
//
// It needs redis-server and valkey-server on PATH (make generate installs
// both). The table records each server's version; regenerate when the
// project moves to newer servers.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rediskit/rediskit/classify/internal/cmdinfo"
	"github.com/rediskit/rediskit/lab"
)

func main() {
	out := flag.String("out", "table_gen.go", "file to write")
	servers := flag.String("servers", "redis,valkey", "the servers to read, comma-separated (redis, valkey)")
	flag.Parse()
	if err := run(*out, strings.Split(*servers, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out string, servers []string) error {
	var sources []cmdinfo.Source
	for _, name := range servers {
		kind, err := lab.ParseServerKind(name)
		if err != nil || kind == lab.ServerAuto {
			return fmt.Errorf("-servers: %q is not redis or valkey", name)
		}
		src, err := read(kind)
		if err != nil {
			return err
		}
		sources = append(sources, src)
	}
	specs, diffs, err := cmdinfo.Merge(sources)
	if err != nil {
		return err
	}
	src, err := cmdinfo.RenderMerged(sources, specs, diffs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil { //nolint:gosec // a Go source file in the repository, read by everyone
		return err
	}
	labels := make([]string, len(sources))
	for i, s := range sources {
		labels[i] = fmt.Sprintf("%s (%d commands)", s.Label(), len(s.Specs))
	}
	fmt.Printf("gen: wrote %s: %d commands from %s; %d differ\n", out, len(specs), strings.Join(labels, " and "), len(diffs))
	return nil
}

// read starts one standalone server of the kind and reads its COMMAND
// reply.
func read(kind lab.ServerKind) (src cmdinfo.Source, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Config{Server: kind})
	if err != nil {
		return src, err
	}
	defer func() {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	v := l.ServerVersion()
	reply, err := l.Node(0).Do(ctx, "COMMAND").Result()
	if err != nil {
		return src, fmt.Errorf("%s: COMMAND: %w", v, err)
	}
	specs, err := cmdinfo.Parse(reply)
	if err != nil {
		return src, fmt.Errorf("%s: %w", v, err)
	}
	return cmdinfo.Source{Server: v.Name, Version: v.Version, Specs: specs}, nil
}
