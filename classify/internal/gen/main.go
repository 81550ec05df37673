// Command gen writes classify/table_gen.go: it starts a standalone
// redis-server with the lab package, reads its COMMAND reply and its
// version, and renders the commands, their arities and their flags as a Go
// table. Run it through go generate in the classify directory:
//
//	go generate ./classify/
//
// It needs redis-server on PATH (make redis installs it). The table records
// the server's version; regenerate when the project moves to a newer Redis.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/rediskit/rediskit/classify/internal/cmdinfo"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/lab"
)

func main() {
	out := flag.String("out", "table_gen.go", "file to write")
	server := flag.String("redis-server", "", "redis-server binary (default: the one on PATH)")
	flag.Parse()
	if err := run(*out, *server); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out, server string) (err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Config{RedisServer: server})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := l.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	node := l.Node(0)
	info, err := node.Do(ctx, "INFO", "server").Text()
	if err != nil {
		return fmt.Errorf("INFO server: %w", err)
	}
	version := redisinfo.ParseInfo(info)["redis_version"]
	if version == "" {
		return fmt.Errorf("INFO server has no redis_version")
	}
	reply, err := node.Do(ctx, "COMMAND").Result()
	if err != nil {
		return fmt.Errorf("COMMAND: %w", err)
	}
	specs, err := cmdinfo.Parse(reply)
	if err != nil {
		return err
	}
	src, err := cmdinfo.Render(version, specs)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, src, 0o644); err != nil { //nolint:gosec // a Go source file in the repository, read by everyone
		return err
	}
	fmt.Printf("gen: wrote %s: %d commands from redis-server %s\n", out, len(specs), version)
	return nil
}
