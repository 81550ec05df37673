package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/examples/shop/shop"
	"github.com/rediskit/rediskit/guard"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// go-redis logs failed dials through a global logger; route it into
	// ours. This is a program's decision, never a library's.
	redis.SetLogger(redisLogger{log})
	code := run(ctx, os.Args[1:], os.Stdout, log)
	stop()
	os.Exit(code)
}

// run runs the shop until ctx ends and returns the exit code: 0 after a
// clean shutdown, 1 when it could not start, 2 for a usage error.
func run(ctx context.Context, args []string, stdout io.Writer, log *slog.Logger) int {
	fs := flag.NewFlagSet("shop", flag.ContinueOnError)
	fs.SetOutput(stdout)
	redisURL := fs.String("redis", "redis://127.0.0.1:6379", "Redis `URL`: redis://[user:password@]host:port[/db], rediss:// for TLS, unix:///path")
	listen := fs.String("listen", "127.0.0.1:8080", "HTTP listen `address`")
	prefix := fs.String("prefix", "shop", "key `prefix` in Redis")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stdout, "shop: unexpected arguments %q\n", fs.Args())
		return 2
	}
	settings, err := guard.ClientConfigFromURL(*redisURL)
	if err != nil {
		fmt.Fprintf(stdout, "shop: -redis: %v\n", err)
		return 2
	}
	settings.KeyPrefix = *prefix
	settings.Logger = log
	g, err := guard.Open(settings)
	if err != nil {
		fmt.Fprintf(stdout, "shop: %v\n", err)
		return 2
	}
	defer g.Close()
	metrics, metricsHandler, stopMetrics, err := shop.NewPrometheusMetrics()
	if err != nil {
		fmt.Fprintf(stdout, "shop: %v\n", err)
		return 1
	}
	defer func() { _ = stopMetrics(context.Background()) }()
	s, err := shop.New(shop.Config{Guard: g, Logger: log, Metrics: metrics, MetricsHandler: metricsHandler})
	if err != nil {
		fmt.Fprintf(stdout, "shop: %v\n", err)
		return 1
	}
	defer s.Close()

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stdout, "shop: %v\n", err)
		return 1
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "shop listening on http://%s\nredis: %v\n", ln.Addr(), settings)

	select {
	case err := <-served:
		fmt.Fprintf(stdout, "shop: %v\n", err)
		return 1
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		fmt.Fprintf(stdout, "shop: shutdown: %v\n", err)
		return 1
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stdout, "shop: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "shop stopped")
	return 0
}

// redisLogger sends go-redis's log lines to slog.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "go-redis: "+fmt.Sprintf(format, v...))
}
