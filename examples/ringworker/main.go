package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/examples/ringworker/worker"
	"github.com/rediskit/rediskit/hashring"
	"github.com/rediskit/rediskit/redisurl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ringworker:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ringworker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("redis", "redis://127.0.0.1:6379", "Redis `URL`: redis://[user:password@]host:port[/db], rediss:// for TLS, unix:///path")
	key := fs.String("key", "example-ring", "the ring's Redis key")
	n := fs.Int("keys", 100, "number of items, named 0 … keys-1")
	printRing := fs.Bool("print", false, "print the ring and exit")
	crc := fs.Bool("crc32", false, "hash keys with CRC-32 instead of xxHash (for old rings)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// redisurl's errors never show the URL's password (go-redis's
	// ParseURL echoes the URL), and its options have no hidden retries:
	// the ring node retries, with backoff, and logs.
	cfg, err := redisurl.Parse(*url)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	opts, err := cfg.Options()
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	client := redis.NewClient(opts)
	defer client.Close()

	log := slog.New(slog.NewTextHandler(stderr, nil))
	ringCfg := hashring.Config{Logger: log}
	if *crc {
		ringCfg.Hash = hashring.CRC32
	}
	if *printRing {
		ring, err := hashring.NewRing(client, *key, ringCfg)
		if err != nil {
			return err
		}
		return ring.Print(ctx, stdout)
	}
	w, err := worker.New(client, *key, worker.Items(*n), ringCfg)
	if err != nil {
		return err
	}
	pid := os.Getpid()
	return w.Run(ctx, func(_ context.Context, owned []string) {
		// Process the owned items here; the example only reports them.
		fmt.Fprintf(stdout, "PID %d, %d keys (%v)\n", pid, len(owned), owned)
	})
}
