package main

import (
	"context"
	"errors"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"
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

func (f *targetFlags) register(cmd *cobra.Command) {
	cmd.Flags().DurationVar(&f.timeout, "timeout", DefaultTimeout,
		"bound on each network step: a connection, a TLS handshake, one command's reply, one sentinel's answer")
	cmd.Flags().BoolVar(&f.json, "json", false, "print the report as JSON (see docs/cli.md for the shape)")
	cmd.Flags().BoolVar(&f.lab, "lab", false,
		"start a local lab (1 master, 2 replicas, 3 sentinels; node2 42ms away) for this command instead of a URL")
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

// isCluster reports a Redis Cluster target: redis+cluster://,
// rediss+cluster://, or go-redis's redis://h1?addr=h2 form.
func (t *target) isCluster() bool { return t.cfg.Kind == redisurl.Cluster }

// clusterClient is a rediskit cluster client of the target with opts
// (the URL's seeds, credentials, TLS and timeouts; the command's
// --timeout where the URL sets none). The caller closes it.
func (t *target) clusterClient(opts cluster.Config) (*cluster.Client, error) {
	if opts.DialTimeout == 0 && t.cfg.DialTimeout == 0 {
		opts.DialTimeout = t.timeout
	}
	if opts.ReadTimeout == 0 && t.cfg.ReadTimeout == 0 {
		opts.ReadTimeout = t.timeout
	}
	if opts.WriteTimeout == 0 && t.cfg.WriteTimeout == 0 {
		opts.WriteTimeout = t.timeout
	}
	return cluster.NewClientFromConfig(t.cfg, opts)
}

// isSentinel reports a redis+sentinel:// or rediss+sentinel:// target.
func (t *target) isSentinel() bool { return t.cfg.Kind == redisurl.Sentinel }

// parseTargetURL parses a URL and fills in the passwords it leaves out
// from the environment: password for the data nodes (when the URL has no
// password: no userinfo, or a username alone), sentinelPassword for the
// sentinels of a sentinel URL (when the URL has no sentinelPassword). A
// password in the URL always wins.
//
// The environment's passwords are set on the parsed Config, never written
// into the URL's text, so no part of the URL (a query value, a file
// path) can end up holding one, and no parse error can quote one.
func parseTargetURL(raw, password, sentinelPassword string) (*redisurl.Config, error) {
	c, err := redisurl.Parse(raw)
	if err != nil {
		c, err = parseNamesAlone(raw, password, sentinelPassword, err)
		if err != nil {
			return nil, err
		}
	}
	if c.Password == "" && password != "" {
		c.Password = password
	}
	if c.Kind == redisurl.Sentinel && c.SentinelPassword == "" && sentinelPassword != "" {
		c.SentinelPassword = sentinelPassword
	}
	return c, nil
}

// parseNamesAlone parses a URL that redisurl refused only because it names
// a user without a password: a username alone in the userinfo
// ("redis://app@host") or sentinelUser without sentinelPassword. redisurl
// requires the password next to the name; here the environment supplies
// it. The name is taken out of the URL (the userinfo, cut where redisurl
// cuts it, or the sentinelUser parameter), the rest is parsed by redisurl,
// and the name is set on the Config. The parts taken out hold no password;
// the passwords are set by the caller. Any other error is returned as
// redisurl gave it.
func parseNamesAlone(raw, password, sentinelPassword string, parseErr error) (*redisurl.Config, error) {
	raw = strings.TrimSpace(raw)
	var username, sentinelUser string
	var haveUser, haveSentinelUser bool
	for range 2 { // at most one of each fix
		var ue *redisurl.Error
		if !errors.As(parseErr, &ue) {
			return nil, parseErr
		}
		switch {
		case ue.Field == "userinfo" && ue.Reason == "a username needs a password" && password != "" && !haveUser:
			rest, name, ok := cutUsername(raw)
			if !ok {
				return nil, parseErr
			}
			raw, username, haveUser = rest, name, true
		case ue.Field == "sentinelPassword" && ue.Reason == redisurl.ReasonMissing && sentinelPassword != "" && !haveSentinelUser:
			rest, name, ok := cutSentinelUser(raw)
			if !ok {
				return nil, parseErr
			}
			raw, sentinelUser, haveSentinelUser = rest, name, true
		default:
			return nil, parseErr
		}
		c, err := redisurl.Parse(raw)
		if err == nil {
			if haveUser {
				c.Username = username
			}
			if haveSentinelUser {
				c.SentinelUsername = sentinelUser
			}
			return c, nil
		}
		parseErr = err
	}
	return nil, parseErr
}

// authority returns where the part after "://" starts and where it ends:
// at the first '/' or '?', as redisurl reads it.
func authority(raw string) (start, end int, ok bool) {
	sep := strings.Index(raw, "://")
	if sep < 0 {
		return 0, 0, false
	}
	start, end = sep+3, len(raw)
	if i := strings.IndexAny(raw[start:], "/?"); i >= 0 {
		end = start + i
	}
	return start, end, true
}

// cutUsername takes the userinfo (a username without a password, with or
// without a trailing ':') out of the URL and returns the URL without it and
// the decoded username.
func cutUsername(raw string) (rest, username string, ok bool) {
	start, end, ok := authority(raw)
	if !ok {
		return "", "", false
	}
	at := strings.LastIndexByte(raw[start:end], '@')
	if at < 0 {
		return "", "", false
	}
	user, _, _ := strings.Cut(raw[start:start+at], ":")
	name, err := url.PathUnescape(user)
	if err != nil || name == "" {
		return "", "", false
	}
	return raw[:start] + raw[start+at+1:], name, true
}

// cutSentinelUser takes the one sentinelUser parameter out of the URL's
// query and returns the URL without it and the decoded name.
func cutSentinelUser(raw string) (rest, name string, ok bool) {
	_, end, ok := authority(raw)
	if !ok {
		return "", "", false
	}
	q := strings.IndexByte(raw[end:], '?')
	if q < 0 {
		return "", "", false
	}
	q += end
	var kept []string
	found := 0
	for _, piece := range strings.Split(raw[q+1:], "&") {
		if v, isUser := strings.CutPrefix(piece, "sentinelUser="); isUser {
			found++
			name = v
			continue
		}
		kept = append(kept, piece)
	}
	if found != 1 {
		return "", "", false
	}
	decoded, err := url.PathUnescape(name)
	if err != nil || decoded == "" {
		return "", "", false
	}
	return raw[:q+1] + strings.Join(kept, "&"), decoded, true
}

// readyURL is a lab's URL without its passwords (the environment supplies
// them), so it can be pasted into another rediskit command as it is.
func readyURL(l *lab.Lab) string {
	if l.IsCluster() {
		return clusterReadyURL(l)
	}
	c, err := redisurl.Parse(l.URL())
	if err != nil {
		return l.Redacted()
	}
	c.Password, c.SentinelPassword = "", ""
	return c.URL()
}

// clusterReadyURL is readyURL for a cluster lab: go-redis's cluster URL,
// which redisurl does not read, with the username kept and the password
// left out. It starts from the redacted URL, so the password is never in
// hand.
func clusterReadyURL(l *lab.Lab) string {
	redacted := l.Redacted()
	u, err := url.Parse(redacted)
	if err != nil {
		return redacted
	}
	switch {
	case u.User == nil:
	case u.User.Username() != "":
		u.User = url.User(u.User.Username())
	default:
		u.User = nil
	}
	return u.String()
}

// sentinelConfig is the Sentinel client's configuration for a sentinel
// target. The URL's timeouts win; otherwise every step gets --timeout.
func (t *target) sentinelConfig() (sentinel.Config, error) {
	c := t.cfg
	o := sentinel.Config{
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
	// The CLI's own connections: replies bounded, as the library's own
	// connections are.
	return respguard.Guard(redisopt.Inner(o)), nil
}

// client returns a go-redis client for the target: the rediskit Sentinel
// client for a sentinel URL, a plain client otherwise. The caller closes
// it.
func (t *target) client(adjust func(*sentinel.Config)) (redis.UniversalClient, error) {
	if t.isSentinel() {
		o, err := t.sentinelConfig()
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
