package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/sentinel"
)

// The environment variables that supply passwords a URL leaves out.
const (
	envPassword         = "REDISKIT_PASSWORD"
	envSentinelPassword = "REDISKIT_SENTINEL_PASSWORD"
)

// DefaultTimeout bounds each network step of a command.
const DefaultTimeout = 2 * time.Second

// targetFlags are the flags of every command that talks to a deployment:
// the URL argument or --lab, --timeout and --json.
type targetFlags struct {
	lab     bool
	timeout time.Duration
	json    bool
}

func (f *targetFlags) register(cmd *cobra.Command, withLab bool) {
	cmd.Flags().DurationVar(&f.timeout, "timeout", DefaultTimeout,
		"bound on each network step: a connection, a TLS handshake, one command's reply, one sentinel's answer")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the report as JSON (see README for the shape)")
	if withLab {
		cmd.Flags().BoolVar(&f.lab, "lab", false,
			"start a local lab (1 master, 2 replicas, 3 sentinels; node2 42ms away) for this command instead of a URL")
	}
}

// withTarget is the RunE of a command that reports on one target: it
// resolves the URL argument or --lab, runs run, and stops the lab after.
func withTarget(f *targetFlags, run func(ctx context.Context, out io.Writer, t *target) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		t, err := openTarget(cmd.Context(), args, f)
		if err != nil {
			return err
		}
		defer t.Close()
		return run(cmd.Context(), cmd.OutOrStdout(), t)
	}
}

// writeFlags are check's and health's write probe flags.
type writeFlags struct {
	write  bool
	prefix string
}

func (w *writeFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&w.write, "write", false, "add the write probe (SET <prefix>:health:write, 60s TTL)")
	cmd.Flags().StringVar(&w.prefix, "prefix", "rediskit", "key prefix of the write probe")
}

// target is the deployment a command talks to: a parsed URL with the
// environment's passwords filled in, and the lab when --lab started one.
type target struct {
	cfg     *redisurl.Config
	lab     *lab.Lab
	timeout time.Duration
}

// openTarget resolves the URL argument or --lab. The caller closes the
// target (which stops the lab).
func openTarget(ctx context.Context, args []string, f *targetFlags) (*target, error) {
	if f.timeout <= 0 {
		return nil, usagef("--timeout must be positive")
	}
	switch {
	case f.lab && len(args) > 0:
		return nil, usagef("give a URL or --lab, not both")
	case !f.lab && len(args) == 0:
		return nil, usagef("a URL is required (redis://, rediss://, redis+sentinel://, rediss+sentinel://), or --lab")
	}
	if f.lab {
		l, err := lab.Start(ctx, demoLabConfig(os.Getenv(envPassword), os.Getenv(envSentinelPassword)))
		if err != nil {
			return nil, err
		}
		cfg, err := redisurl.Parse(l.URL())
		if err != nil {
			_ = l.Close()
			return nil, err
		}
		return &target{cfg: cfg, lab: l, timeout: f.timeout}, nil
	}
	cfg, err := parseTargetURL(args[0], os.Getenv(envPassword), os.Getenv(envSentinelPassword))
	if err != nil {
		return nil, usageError{err}
	}
	return &target{cfg: cfg, timeout: f.timeout}, nil
}

// Close stops the lab, if the target started one.
func (t *target) Close() error {
	if t.lab != nil {
		return t.lab.Close()
	}
	return nil
}

// String is the target's URL with every password redacted.
func (t *target) String() string { return t.cfg.Redacted() }

// isSentinel reports a redis+sentinel:// or rediss+sentinel:// target.
func (t *target) isSentinel() bool { return t.cfg.Kind == redisurl.Sentinel }

// parseTargetURL parses a URL and fills in the passwords it leaves out
// from the environment: password for the data nodes (when the URL has no
// password: no userinfo, or a username alone), sentinelPassword for the
// sentinels of a sentinel URL (when the URL has no sentinelPassword). A
// password in the URL always wins.
func parseTargetURL(raw, password, sentinelPassword string) (*redisurl.Config, error) {
	raw = strings.TrimSpace(raw)
	// A username alone ("redis://app@host") does not parse (a username
	// needs a password): give it the environment's password first.
	if password != "" {
		if sep := strings.Index(raw, "://"); sep >= 0 {
			rest := raw[sep+3:]
			if at := strings.LastIndexByte(rest, '@'); at > 0 && !strings.Contains(rest[:at], ":") {
				raw = raw[:sep+3] + rest[:at] + ":" + escapeAll(password) + rest[at:]
			}
		}
	}
	// sentinelUser without sentinelPassword does not parse either.
	if sentinelPassword != "" && strings.Contains(raw, "sentinelUser=") && !strings.Contains(raw, "sentinelPassword=") {
		raw += "&sentinelPassword=" + escapeAll(sentinelPassword)
	}
	c, err := redisurl.Parse(raw)
	if err != nil {
		return nil, err
	}
	if c.Password == "" && password != "" {
		c.Password = password
	}
	if c.Kind == redisurl.Sentinel && c.SentinelPassword == "" && sentinelPassword != "" {
		c.SentinelPassword = sentinelPassword
	}
	return c, nil
}

// escapeAll percent-encodes every byte outside A–Z a–z 0–9 - . _ ~, as
// redisurl requires in passwords.
func escapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// readyURL is a lab's URL without its passwords (the environment supplies
// them), so it can be pasted into another rediskit command as it is.
func readyURL(l *lab.Lab) string {
	c, err := redisurl.Parse(l.URL())
	if err != nil {
		return l.Redacted()
	}
	c.Password, c.SentinelPassword = "", ""
	return c.URL()
}

// sentinelOptions are the Sentinel client's options for a sentinel
// target. The URL's timeouts win; otherwise every step gets --timeout.
func (t *target) sentinelOptions() (sentinel.Options, error) {
	c := t.cfg
	o := sentinel.Options{
		MasterName:       c.MasterName,
		SentinelAddrs:    c.Sentinels,
		SentinelUsername: c.SentinelUsername,
		SentinelPassword: c.SentinelPassword,
		Username:         c.Username,
		Password:         c.Password,
		DB:               c.DB,
		ClientName:       c.ClientName,
		ReadFrom:         c.ReadFrom,
		DialTimeout:      orDefault(c.DialTimeout, t.timeout),
		ReadTimeout:      orDefault(c.ReadTimeout, t.timeout),
		WriteTimeout:     orDefault(c.WriteTimeout, t.timeout),
		SentinelTimeout:  t.timeout,
		ProbeTimeout:     t.timeout,
		DiscoveryTimeout: t.timeout,
	}
	tlsCfg, err := c.TLSConfig()
	if err != nil {
		return o, err
	}
	o.TLSConfig, o.SentinelTLSConfig = tlsCfg, tlsCfg
	return o, nil
}

// nodeOptions are go-redis options for a direct target (redis://,
// rediss://, unix://), with no retries and every step bounded by --timeout
// unless the URL sets its own.
func (t *target) nodeOptions() (*redis.Options, error) {
	o, err := t.cfg.Options()
	if err != nil {
		return nil, err
	}
	o.DialTimeout = orDefault(t.cfg.DialTimeout, t.timeout)
	o.ReadTimeout = orDefault(t.cfg.ReadTimeout, t.timeout)
	o.WriteTimeout = orDefault(t.cfg.WriteTimeout, t.timeout)
	return redisopt.Inner(o), nil
}

// client returns a go-redis client for the target: the rediskit Sentinel
// client for a sentinel URL, a plain client otherwise. The caller closes
// it.
func (t *target) client(adjust func(*sentinel.Options)) (redis.UniversalClient, error) {
	if t.isSentinel() {
		o, err := t.sentinelOptions()
		if err != nil {
			return nil, err
		}
		if adjust != nil {
			adjust(&o)
		}
		return sentinel.NewClient(o)
	}
	o, err := t.nodeOptions()
	if err != nil {
		return nil, err
	}
	return redis.NewClient(o), nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// checkFailed is the error of a check that ran and failed (exit code 1);
// the report has been printed.
type checkFailed struct{ err error }

func (e checkFailed) Error() string { return e.err.Error() }
func (e checkFailed) Unwrap() error { return e.err }

// isRedisURLError reports a *redisurl.Error (a bad URL or TLS file).
func isRedisURLError(err error) bool {
	var ue *redisurl.Error
	return errors.As(err, &ue)
}

// ms is a duration in milliseconds with microsecond precision, for JSON.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// hostOf returns the host of a host:port address.
func hostOf(addr string) string {
	u := url.URL{Host: addr}
	return u.Hostname()
}
