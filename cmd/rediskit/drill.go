package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/sentinel"
)

type drillFlags struct {
	targetFlags
	duration     time.Duration
	writers      int
	readers      int
	rate         int
	failover     bool
	failoverWait time.Duration
	yes          bool
}

func newDrillCommand() *cobra.Command {
	var f drillFlags
	cmd := &cobra.Command{
		Use:   "drill URL",
		Short: "A failover drill: bounded load, optional SENTINEL FAILOVER, lost and duplicate writes",
		Long: `Run bounded read and write load against a deployment and report what the
application would have seen: the longest time without an acknowledged
write (and read), the errors by kind, and, checked on the master at the
end, duplicated writes and acknowledged writes that were lost. With
--failover (redis+sentinel:// only) it sends SENTINEL FAILOVER a third
of the way in and reports when the client followed.

Writers RPUSH unique op ids ("<writer>-<n>") to one list; readers GET one
key. Both keys live under a prefix of the drill's own,
rediskit:drill:<random id>:, and are deleted at the end (also after
Ctrl-C, which ends the load early). --rate caps the operations per second
of all workers together; each operation is bounded by --timeout. A
redis+sentinel:// URL is driven through the rediskit Sentinel client
(with the URL's readFrom for reads), a redis:// URL through a plain
go-redis client without retries.

A redis:// URL of a replica is refused (exit code 2): the drill writes,
and it writes nothing there.

The drill refuses to run without --yes against anything that is not a
rediskit lab. --lab starts one. A URL is judged a lab only when every
server it names (the sentinels and the master they name, or the server)
is on a loopback address and says, in INFO server, that its config file
lies in a rediskit lab directory (rediskit-lab-*, as lab up and the lab
package create them). Anything else, including a lab started with a
directory of its own, needs --yes.

The exit code is 1 when an acknowledged write was lost or a write was
applied twice, when the failover was asked for and the client did not
follow it, or when the result could not be checked.`,
		Example: `  rediskit drill --lab --failover
  rediskit drill redis+sentinel://10.0.0.1,10.0.0.2/mymaster --failover --duration 30s --yes`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case f.duration <= 0:
				return usagef("--duration must be positive")
			case f.writers < 1 || f.readers < 0:
				return usagef("--writers must be at least 1 and --readers at least 0")
			case f.rate < 0:
				return usagef("--rate cannot be negative")
			case f.failoverWait <= 0:
				return usagef("--failover-wait must be positive")
			}
			t, err := openTarget(cmd.Context(), args, &f.targetFlags)
			if err != nil {
				return err
			}
			defer t.Close()
			if f.failover && !t.isSentinel() {
				return usagef("--failover needs a redis+sentinel:// URL (or --lab)")
			}
			return runDrill(cmd.Context(), cmd.OutOrStdout(), t, &f)
		},
	}
	f.targetFlags.register(cmd, true)
	cmd.Flags().DurationVar(&f.duration, "duration", 10*time.Second, "how long the load runs")
	cmd.Flags().IntVar(&f.writers, "writers", 4, "concurrent writers")
	cmd.Flags().IntVar(&f.readers, "readers", 4, "concurrent readers")
	cmd.Flags().IntVar(&f.rate, "rate", 1000, "operations per second of all workers together (0: no cap)")
	cmd.Flags().BoolVar(&f.failover, "failover", false, "send SENTINEL FAILOVER a third of the way in")
	cmd.Flags().DurationVar(&f.failoverWait, "failover-wait", 30*time.Second, "how long to wait after the load for the client to follow the failover")
	cmd.Flags().BoolVar(&f.yes, "yes", false, "run against a target that is not a rediskit lab")
	return cmd
}

// drillJSON is drill's --json report. Times "at_s" are seconds since the
// load started.
type drillJSON struct {
	Target       string        `json:"target"`
	Lab          bool          `json:"lab"`
	RunID        string        `json:"run_id"`
	KeyPrefix    string        `json:"key_prefix"`
	DurationS    float64       `json:"duration_s"`
	Interrupted  bool          `json:"interrupted"`
	Writers      int           `json:"writers"`
	Readers      int           `json:"readers"`
	Rate         int           `json:"rate"`
	Writes       drillOpsJSON  `json:"writes"`
	Reads        drillOpsJSON  `json:"reads"`
	Failover     *failoverJSON `json:"failover"`
	Verification *verifyJSON   `json:"verification"`
	DeletedKeys  int64         `json:"deleted_keys"`
	Events       []drillEvent  `json:"events"`
	OK           bool          `json:"ok"`
	Error        string        `json:"error,omitempty"`
}

type drillOpsJSON struct {
	Attempted    int            `json:"attempted"`
	Succeeded    int            `json:"succeeded"`
	Failed       int            `json:"failed"`
	Errors       map[string]int `json:"errors"`
	LongestGapMS float64        `json:"longest_gap_ms"`
	GapAtS       float64        `json:"gap_at_s"`
	P50MS        float64        `json:"p50_ms"`
	P99MS        float64        `json:"p99_ms"`
}

type failoverJSON struct {
	RequestedAtS   float64 `json:"requested_at_s"`
	Sentinel       string  `json:"sentinel"`
	OldMaster      string  `json:"old_master"`
	NewMaster      string  `json:"new_master"`
	SwitchedAfterS float64 `json:"switched_after_s"`
	Error          string  `json:"error,omitempty"`
}

type verifyJSON struct {
	Present        int `json:"present"`
	Acknowledged   int `json:"acknowledged"`
	Duplicates     int `json:"duplicates"`
	Lost           int `json:"lost"`
	FailedButFound int `json:"failed_but_applied"`
}

type drillEvent struct {
	AtS    float64 `json:"at_s"`
	Event  string  `json:"event"`
	Detail string  `json:"detail"`
}

// opRecord is one operation's outcome.
type opRecord struct {
	id   string
	end  time.Time
	took time.Duration
	err  error
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func runDrill(ctx context.Context, out io.Writer, t *target, f *drillFlags) error {
	isLab := t.lab != nil
	if !isLab {
		ok, why := judgeLab(ctx, t)
		isLab = ok
		if !ok && !f.yes {
			return usagef("%s is not a rediskit lab (%s): pass --yes to run the drill against it", t, why)
		}
	}
	runID := newRunID()
	prefix := "rediskit:drill:" + runID
	opsKey, readKey := prefix+":ops", prefix+":read"
	rep := drillJSON{Target: t.String(), Lab: isLab, RunID: runID, KeyPrefix: prefix + ":", Writers: f.writers,
		Readers: f.readers, Rate: f.rate, Events: []drillEvent{}}

	var began time.Time
	var evMu sync.Mutex
	event := func(at time.Time, name, detail string) {
		evMu.Lock()
		defer evMu.Unlock()
		if began.IsZero() {
			return
		}
		rep.Events = append(rep.Events, drillEvent{AtS: at.Sub(began).Seconds(), Event: name, Detail: detail})
	}
	var switchedAt time.Time
	var switchedTo string
	client, err := t.client(func(o *sentinel.Options) {
		o.Observer = func(ev sentinel.Event) {
			switch ev.Kind {
			case sentinel.EventMasterChanged, sentinel.EventFailoverStarted, sentinel.EventFailoverHoldEnded,
				sentinel.EventWriteRefused, sentinel.EventWriteRerun:
				detail := strings.TrimPrefix(ev.String(), ev.Time.Format("15:04:05.000")+" ")
				event(ev.Time, ev.Kind.String(), detail)
			}
			if ev.Kind == sentinel.EventMasterChanged && ev.OldMaster != "" {
				evMu.Lock()
				if switchedAt.IsZero() {
					switchedAt, switchedTo = ev.Time, ev.Master
				}
				evMu.Unlock()
			}
		}
	})
	if err != nil {
		return usageError{err}
	}
	defer client.Close()

	text := func(format string, args ...any) {
		if !f.json {
			fmt.Fprintf(out, format, args...)
		}
	}
	kind := "not a lab, run with --yes"
	if isLab {
		kind = "a rediskit lab"
	}
	rateText := "no rate cap"
	if f.rate > 0 {
		rateText = fmt.Sprintf("at most %d ops/s", f.rate)
	}
	text("drill on %s (%s): %v, %d writers, %d readers, %s; keys %s:*\n",
		t, kind, f.duration, f.writers, f.readers, rateText, prefix)

	// Every key is deleted at the end, whatever happened; then the JSON
	// report is printed. Unless nothing was written: the setup's SET was
	// refused before it ran (a replica's READONLY, no connection), and no
	// worker started.
	wroteNothing := false
	cleanup := sync.OnceFunc(func() {
		if wroteNothing {
			return
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.timeout)
		defer cancel()
		n, err := client.Del(sentinel.WithReadFrom(cctx, sentinel.Master), opsKey, readKey).Result()
		if err != nil {
			text("could not delete the drill's keys %s:* (%v): delete them by hand\n", prefix, err)
			return
		}
		rep.DeletedKeys = n
		text("deleted %d keys (%s:*)\n", n, prefix)
	})
	defer cleanup()
	finish := func(failures []string) error {
		cleanup()
		rep.OK = len(failures) == 0
		if !rep.OK {
			rep.Error = strings.Join(failures, "; ")
		}
		if f.json {
			if err := writeJSON(out, rep); err != nil {
				return err
			}
		}
		if !rep.OK {
			return checkFailed{errors.New("drill failed: " + rep.Error)}
		}
		return nil
	}

	setup, cancel := context.WithTimeout(ctx, t.timeout)
	err = client.Set(setup, readKey, runID, 0).Err()
	cancel()
	if err != nil {
		wroteNothing = failure.NotExecuted(err)
		if redis.IsReadOnlyError(err) && !t.isSentinel() {
			// A replica's URL: the drill writes, and there is no master
			// behind the URL to follow. Nothing to check or delete.
			return usagef("%s is a replica (read-only: %v); the drill wrote nothing. "+
				"Give it the master's URL, or a redis+sentinel:// URL to follow the master", t, err)
		}
		if wroteNothing {
			text("the setup's SET was not run (%v): the drill wrote no keys\n", err)
		}
		return finish([]string{fmt.Sprintf("setup: SET %s: %v", readKey, err)})
	}

	// The load.
	stop := make(chan struct{})
	var mu sync.Mutex
	var writes, reads []opRecord
	workers := f.writers + f.readers
	var interval time.Duration
	if f.rate > 0 {
		interval = time.Duration(float64(time.Second) * float64(workers) / float64(f.rate))
	}
	pace := func(next *time.Time) bool {
		if interval > 0 {
			*next = next.Add(interval)
			if d := time.Until(*next); d > 0 {
				timer := time.NewTimer(d)
				defer timer.Stop()
				select {
				case <-stop:
					return false
				case <-timer.C:
				}
			} else if d < -interval {
				*next = time.Now() // behind: no burst to catch up
			}
		}
		select {
		case <-stop:
			return false
		default:
			return true
		}
	}
	var wg sync.WaitGroup
	evMu.Lock()
	began = time.Now()
	evMu.Unlock()
	for w := range f.writers {
		wg.Go(func() {
			next := time.Now()
			for i := 0; pace(&next); i++ {
				id := fmt.Sprintf("%d-%d", w, i)
				octx, cancel := context.WithTimeout(ctx, t.timeout)
				start := time.Now()
				err := client.RPush(octx, opsKey, id).Err()
				cancel()
				mu.Lock()
				writes = append(writes, opRecord{id: id, end: time.Now(), took: time.Since(start), err: err})
				mu.Unlock()
			}
		})
	}
	for range f.readers {
		wg.Go(func() {
			next := time.Now()
			for pace(&next) {
				octx, cancel := context.WithTimeout(ctx, t.timeout)
				start := time.Now()
				err := client.Get(octx, readKey).Err()
				cancel()
				if errors.Is(err, redis.Nil) {
					err = nil // a replica that has not the key yet answered
				}
				mu.Lock()
				reads = append(reads, opRecord{end: time.Now(), took: time.Since(start), err: err})
				mu.Unlock()
			}
		})
	}

	// The failover, a third of the way in.
	var fo *failoverJSON
	var oldMaster string
	timer := time.NewTimer(f.duration / 3)
	end := time.NewTimer(f.duration)
	defer timer.Stop()
	defer end.Stop()
	interrupted := false
load:
	for {
		select {
		case <-ctx.Done():
			interrupted = true
			break load
		case <-end.C:
			break load
		case <-timer.C:
			if !f.failover {
				continue
			}
			sc := client.(*sentinel.Client)
			oldMaster = sc.Master()
			fo = &failoverJSON{RequestedAtS: time.Since(began).Seconds(), OldMaster: oldMaster}
			addr, err := sendFailover(ctx, t)
			fo.Sentinel = addr
			if err != nil {
				fo.Error = "SENTINEL FAILOVER: " + err.Error()
				event(time.Now(), "failover request failed", fo.Error)
			} else {
				event(time.Now(), "failover requested",
					fmt.Sprintf("SENTINEL FAILOVER %s sent to %s (the client's master: %s)", t.cfg.MasterName, addr, oldMaster))
			}
		}
	}
	close(stop)
	wg.Wait()
	rep.DurationS = time.Since(began).Seconds()
	rep.Interrupted = interrupted
	if interrupted {
		text("interrupted after %.1fs: the load stopped; checking and cleaning up\n", rep.DurationS)
	}
	// From here on, Ctrl-C no longer cuts the checks short: each is bounded.
	ctx = context.WithoutCancel(ctx)

	var failures []string
	if fo != nil && fo.Error == "" {
		sc := client.(*sentinel.Client)
		deadline := time.Now().Add(f.failoverWait)
		for sc.Master() == oldMaster && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		evMu.Lock()
		at, to := switchedAt, switchedTo
		evMu.Unlock()
		if !at.IsZero() {
			fo.NewMaster = to
			fo.SwitchedAfterS = at.Sub(began).Seconds() - fo.RequestedAtS
		} else {
			fo.Error = fmt.Sprintf("the client did not follow the failover within %v of the load's end (master still %s)", f.failoverWait, sc.Master())
		}
	}
	if fo != nil && fo.Error != "" {
		failures = append(failures, "failover: "+fo.Error)
	}
	rep.Failover = fo

	evMu.Lock()
	slices.SortStableFunc(rep.Events, func(a, b drillEvent) int {
		switch {
		case a.AtS < b.AtS:
			return -1
		case a.AtS > b.AtS:
			return 1
		}
		return 0
	})
	events := slices.Clone(rep.Events)
	evMu.Unlock()
	if len(events) > 0 {
		text("timeline (seconds since the load started; the Sentinel client's events):\n")
		for _, ev := range events {
			text("  %+7.3fs  %s\n", ev.AtS, ev.Detail)
		}
	}
	if fo != nil {
		if fo.Error != "" {
			text("failover: %s\n", fo.Error)
		} else {
			text("failover: the client followed to %s %v after the request\n",
				fo.NewMaster, time.Duration(fo.SwitchedAfterS*float64(time.Second)).Round(time.Millisecond))
		}
	}

	rep.Writes = summarizeOps(writes, began)
	rep.Reads = summarizeOps(reads, began)
	text("writes: %d acknowledged, %d failed%s; longest gap without an acknowledged write %v (at %+.2fs); p50 %.2fms, p99 %.2fms\n",
		rep.Writes.Succeeded, rep.Writes.Failed, errorsText(rep.Writes.Errors), msDuration(rep.Writes.LongestGapMS), rep.Writes.GapAtS,
		rep.Writes.P50MS, rep.Writes.P99MS)
	if f.readers > 0 {
		text("reads:  %d answered, %d failed%s; longest gap without an answered read %v (at %+.2fs); p50 %.2fms, p99 %.2fms\n",
			rep.Reads.Succeeded, rep.Reads.Failed, errorsText(rep.Reads.Errors), msDuration(rep.Reads.LongestGapMS), rep.Reads.GapAtS,
			rep.Reads.P50MS, rep.Reads.P99MS)
	}

	v, err := verifyDrill(ctx, client, t.timeout, opsKey, writes)
	if err != nil {
		failures = append(failures, "check: "+err.Error())
		text("check: could not read %s: %v\n", opsKey, err)
	} else {
		rep.Verification = v
		text("check on the master: %d of %d acknowledged writes present; %d duplicated; %d lost; %d failed writes applied anyway\n",
			v.Acknowledged-v.Lost, v.Acknowledged, v.Duplicates, v.Lost, v.FailedButFound)
		if v.Lost > 0 {
			failures = append(failures, fmt.Sprintf("%d acknowledged writes lost", v.Lost))
		}
		if v.Duplicates > 0 {
			failures = append(failures, fmt.Sprintf("%d writes applied twice", v.Duplicates))
		}
	}
	return finish(failures)
}

func msDuration(v float64) time.Duration {
	return time.Duration(v * float64(time.Millisecond)).Round(time.Millisecond)
}

func errorsText(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// summarizeOps counts outcomes, classifies errors, and finds the longest
// time without a success, from the load's start to its last operation.
func summarizeOps(ops []opRecord, began time.Time) drillOpsJSON {
	s := drillOpsJSON{Attempted: len(ops), Errors: map[string]int{}}
	var ok []time.Time
	var lat []time.Duration
	last := began
	for _, op := range ops {
		if op.end.After(last) {
			last = op.end
		}
		if op.err != nil {
			s.Failed++
			s.Errors[errKind(op.err)]++
			continue
		}
		s.Succeeded++
		ok = append(ok, op.end)
		lat = append(lat, op.took)
	}
	slices.SortFunc(ok, func(a, b time.Time) int { return a.Compare(b) })
	prev := began
	for _, at := range append(ok, last) {
		if gap := at.Sub(prev); ms(gap) > s.LongestGapMS {
			s.LongestGapMS, s.GapAtS = ms(gap), prev.Sub(began).Seconds()
		}
		prev = at
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		s.P50MS = ms(lat[len(lat)/2])
		s.P99MS = ms(lat[(len(lat)*99)/100])
	}
	return s
}

// errKind names an error's kind for the drill's tally.
func errKind(err error) string {
	var mce *sentinel.MasterChangedError
	var nde *sentinel.NotDurableError
	var de *sentinel.DiscoveryError
	var ne net.Error
	switch {
	case errors.As(err, &mce):
		return "master changed"
	case errors.As(err, &nde):
		return "not durable"
	case errors.Is(err, sentinel.ErrFailoverInProgress):
		return "failover in progress"
	case errors.Is(err, sentinel.ErrNoReplica):
		return "no replica"
	case errors.As(err, &de):
		return "no master"
	case redis.IsReadOnlyError(err):
		return "READONLY"
	case failure.Timeout(err):
		return "timeout"
	case errors.As(err, &ne), failure.Network(err), errors.Is(err, redis.ErrClosed):
		return "connection"
	}
	var re redis.Error
	if errors.As(err, &re) {
		word, _, _ := strings.Cut(re.Error(), " ")
		return word
	}
	return "other"
}

// verifyDrill reads the op list on the master and compares it with the
// writes' outcomes.
func verifyDrill(ctx context.Context, c redis.UniversalClient, timeout time.Duration, key string, writes []opRecord) (*verifyJSON, error) {
	var present []string
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		present, err = readList(ctx, c, timeout, key)
		if err == nil {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	count := make(map[string]int, len(present))
	for _, id := range present {
		count[id]++
	}
	v := &verifyJSON{Present: len(present)}
	for _, w := range writes {
		n := count[w.id]
		if n > 1 {
			v.Duplicates++
		}
		if w.err == nil {
			v.Acknowledged++
			if n == 0 {
				v.Lost++
			}
		} else if n > 0 {
			v.FailedButFound++
		}
	}
	return v, nil
}

// readList reads a list in pages of 10,000, each bounded by timeout.
func readList(ctx context.Context, c redis.UniversalClient, timeout time.Duration, key string) ([]string, error) {
	const page = 10000
	ctx = sentinel.WithReadFrom(ctx, sentinel.Master)
	var all []string
	for start := int64(0); ; start += page {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		part, err := c.LRange(rctx, key, start, start+page-1).Result()
		cancel()
		if err != nil {
			return nil, err
		}
		all = append(all, part...)
		if len(part) < page {
			return all, nil
		}
	}
}

// sendFailover asks the target's sentinels, in order, for SENTINEL
// FAILOVER until one accepts; it returns that sentinel's address.
func sendFailover(ctx context.Context, t *target) (string, error) {
	tlsCfg, err := t.cfg.TLSConfig()
	if err != nil {
		return "", err
	}
	var errs []error
	for _, addr := range t.cfg.Sentinels {
		c := redis.NewClient(redisopt.Inner(&redis.Options{
			Addr: addr, Username: t.cfg.SentinelUsername, Password: t.cfg.SentinelPassword, TLSConfig: tlsCfg,
			DialTimeout: t.timeout, ReadTimeout: t.timeout, WriteTimeout: t.timeout,
		}))
		sctx, cancel := context.WithTimeout(ctx, t.timeout)
		err := c.Do(sctx, "SENTINEL", "FAILOVER", t.cfg.MasterName).Err()
		cancel()
		_ = c.Close()
		if err == nil {
			return addr, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return "", errors.Join(errs...)
}

// judgeLab decides whether a URL target is a rediskit lab: every server
// it names is on loopback and reports (INFO server) a config file inside
// a rediskit-lab-* directory. For a sentinel URL, the sentinels and the
// master the first of them names are checked. why says what disqualified
// it.
func judgeLab(ctx context.Context, t *target) (ok bool, why string) {
	tlsCfg, err := t.cfg.TLSConfig()
	if err != nil {
		return false, err.Error()
	}
	type server struct {
		addr, user, pass string
	}
	var servers []server
	if t.isSentinel() {
		for _, s := range t.cfg.Sentinels {
			servers = append(servers, server{s, t.cfg.SentinelUsername, t.cfg.SentinelPassword})
		}
	} else {
		servers = append(servers, server{t.cfg.Addr, t.cfg.Username, t.cfg.Password})
	}
	marker := func(s server, sentinelToo bool) (string, error) {
		if !isLoopback(s.addr) {
			return "", fmt.Errorf("%s is not a loopback address", s.addr)
		}
		c := redis.NewClient(redisopt.Inner(&redis.Options{
			Addr: s.addr, Username: s.user, Password: s.pass, TLSConfig: tlsCfg,
			DialTimeout: t.timeout, ReadTimeout: t.timeout, WriteTimeout: t.timeout,
		}))
		defer c.Close()
		ictx, cancel := context.WithTimeout(ctx, t.timeout)
		defer cancel()
		info, err := c.Info(ictx, "server").Result()
		if err != nil {
			return "", fmt.Errorf("INFO server on %s: %w", s.addr, err)
		}
		conf := redisinfo.ParseInfo(info)["config_file"]
		if !strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(conf))), "rediskit-lab-") {
			return "", fmt.Errorf("%s runs with config file %q, outside a rediskit-lab-* directory", s.addr, conf)
		}
		if !sentinelToo {
			return "", nil
		}
		v, err := c.Do(ictx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", t.cfg.MasterName).StringSlice()
		if err != nil || len(v) != 2 {
			return "", fmt.Errorf("sentinel %s names no master %q (%v)", s.addr, t.cfg.MasterName, err)
		}
		return net.JoinHostPort(v[0], v[1]), nil
	}
	var master string
	for i, s := range servers {
		m, err := marker(s, t.isSentinel() && i == 0)
		if err != nil {
			return false, err.Error()
		}
		if i == 0 {
			master = m
		}
	}
	if master != "" {
		if _, err := marker(server{master, t.cfg.Username, t.cfg.Password}, false); err != nil {
			return false, err.Error()
		}
	}
	return true, ""
}

func isLoopback(addr string) bool {
	host := hostOf(addr)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
