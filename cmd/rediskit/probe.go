package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
)

type probeFlags struct {
	targetFlags
	watch        bool
	interval     time.Duration
	maxStaleness time.Duration
}

func newProbeCommand() *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:   "probe URL",
		Short: "The replica election's RTT table: which replica reads go to, and why",
		Long: `Run the latency-aware replica election of package replica against a
redis+sentinel:// deployment, as a client of it would, and print its RTT
table: per node the role, the moving average (EWMA) of the PING round trip,
the last sample, the replication lag (bytes and estimated seconds), whether
the last probe succeeded, and whether the replica is elected (reads under
replica and replicaPreferred go to it; "nearest" marks where reads under
nearest go) or excluded, and why.

The prober probes every node every --interval on connections of its own
(two PINGs, the shorter counts; ROLE on the master, INFO replication on the
replicas), each command bounded by --timeout. Without --watch, probe prints
the table after the first round and exits: 0 when the master answered and,
if there are replicas, one is elected; 1 otherwise. With --watch it
re-prints the table after every round, until Ctrl-C (exit 0): on a
terminal it redraws the screen (as watch(1) does) with the last five changes
of the election under the table; otherwise it prints each change of the
election and one table after another.

With --json: {"target", "master_name", "round", "at", "nodes": [{"addr",
"role", "rtt_ms", "last_rtt_ms", "samples", "healthy", "error", "link_up",
"lag_bytes", "lag_ms", "lag_at_least", "elected", "nearest", "excluded",
"why"}]}, one line per round with --watch.`,
		Example: `  rediskit probe redis+sentinel://10.0.0.1,10.0.0.2,10.0.0.3/mymaster
  rediskit probe --lab --watch --interval 500ms`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.interval < replica.MinProbeInterval {
				return usagef("--interval must be at least %v", replica.MinProbeInterval)
			}
			t, err := openTarget(cmd.Context(), args, &f.targetFlags)
			if err != nil {
				return err
			}
			defer t.Close()
			if !t.isSentinel() {
				return usagef("probe needs a redis+sentinel:// URL: the election chooses among a master's replicas")
			}
			return runProbe(cmd.Context(), cmd.OutOrStdout(), t, &f)
		},
	}
	f.targetFlags.register(cmd, true)
	cmd.Flags().BoolVar(&f.watch, "watch", false, "re-print the table after every probe round until Ctrl-C")
	cmd.Flags().DurationVar(&f.interval, "interval", replica.DefaultProbeInterval, "time between probe rounds")
	cmd.Flags().DurationVar(&f.maxStaleness, "max-staleness", 0, "exclude replicas lagging more than this (0: no bound), as replica.Config.MaxStaleness")
	return cmd
}

// probeJSON is probe's --json report (one per round with --watch).
type probeJSON struct {
	Target     string          `json:"target"`
	MasterName string          `json:"master_name"`
	Round      uint64          `json:"round"`
	At         time.Time       `json:"at"`
	Nodes      []probeNodeJSON `json:"nodes"`
}

type probeNodeJSON struct {
	Addr       string   `json:"addr"`
	Role       string   `json:"role"`
	RTTMS      float64  `json:"rtt_ms"`
	LastRTTMS  float64  `json:"last_rtt_ms"`
	Samples    int      `json:"samples"`
	Healthy    bool     `json:"healthy"`
	Error      string   `json:"error,omitempty"`
	LinkUp     *bool    `json:"link_up,omitempty"`
	LagBytes   *int64   `json:"lag_bytes,omitempty"`
	LagMS      *float64 `json:"lag_ms,omitempty"`
	LagAtLeast bool     `json:"lag_at_least,omitempty"`
	Elected    bool     `json:"elected"`
	Nearest    bool     `json:"nearest"`
	Excluded   string   `json:"excluded,omitempty"`
	Why        string   `json:"why"`
}

func runProbe(ctx context.Context, out io.Writer, t *target, f *probeFlags) error {
	var evMu sync.Mutex
	var events []replica.Event
	// The Sentinel client's default election, with the flags' settings.
	cfg := replica.DefaultConfig()
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.MaxStaleness = f.interval, t.timeout, f.maxStaleness
	cfg.Observer = func(ev replica.Event) {
		evMu.Lock()
		events = append(events, ev)
		evMu.Unlock()
	}
	sel, err := replica.NewSelector(cfg)
	if err != nil {
		return usageError{err}
	}
	opts, err := t.sentinelOptions()
	if err != nil {
		_ = sel.Close()
		return usageError{err}
	}
	opts.ReplicaSelector = sel
	client, err := sentinel.NewClient(opts)
	if err != nil {
		_ = sel.Close()
		return usageError{err}
	}
	defer client.Close() // closes the selector too

	// The selector learns the topology from the client: wait for the
	// client's first discovery, bounded by --timeout.
	pctx, cancel := context.WithTimeout(ctx, t.timeout)
	err = client.Ping(pctx).Err()
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return checkFailed{fmt.Errorf("no master for %q: %w", t.cfg.MasterName, err)}
	}
	if err := sel.Start(); err != nil {
		return err
	}

	tty := !f.json && isTerminal(out)
	var recent []string // the last election changes, shown under the table on a terminal
	for round := uint64(1); ; round++ {
		// A round takes at most a few probe timeouts; the first starts now.
		wctx, cancel := context.WithTimeout(ctx, f.interval+4*t.timeout)
		err := sel.WaitRound(wctx, round)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				if f.watch {
					return nil // Ctrl-C ends --watch
				}
				return ctx.Err()
			}
			return checkFailed{fmt.Errorf("no probe round completed within %v: %w", f.interval+4*t.timeout, err)}
		}
		table := sel.Table()
		evMu.Lock()
		evs := events
		events = nil
		evMu.Unlock()
		rep := probeJSON{Target: t.String(), MasterName: t.cfg.MasterName, Round: sel.Rounds(), At: time.Now(), Nodes: []probeNodeJSON{}}
		for _, n := range table {
			rep.Nodes = append(rep.Nodes, nodeJSON(n))
		}
		switch {
		case f.json && f.watch:
			if err := writeJSONLine(out, rep); err != nil {
				return err
			}
		case f.json:
			if err := writeJSON(out, rep); err != nil {
				return err
			}
		default:
			var changes []string
			for _, ev := range evs {
				changes = append(changes, fmt.Sprintf("%s election changed (%s): elected %s (was %s): %s",
					ev.Time.Format("15:04:05.000"), ev.Reason, addrList(ev.Elected), addrList(ev.Previous), ev.Detail))
			}
			var b strings.Builder
			header := fmt.Sprintf("%s  round %d of %q, every %v\n", rep.At.Format("15:04:05.000"), rep.Round, t.cfg.MasterName, f.interval)
			switch {
			case f.watch && tty:
				// Redraw the screen, as watch(1) does (lines that wrap make
				// moving the cursor up by a count unreliable); the last
				// changes stay under the table.
				recent = append(recent, changes...)
				recent = recent[max(0, len(recent)-5):]
				b.WriteString("\x1b[H\x1b[2J")
				b.WriteString(header)
				writeProbeTable(&b, table, nil)
				if len(recent) > 0 {
					b.WriteString("\nlast changes of the election:\n")
					for _, c := range recent {
						b.WriteString(c + "\n")
					}
				}
				b.WriteString("\nCtrl-C stops\n")
			case f.watch:
				for _, c := range changes {
					b.WriteString(c + "\n")
				}
				b.WriteString(header)
				writeProbeTable(&b, table, nil)
				b.WriteString("\n")
			default:
				b.WriteString(header)
				writeProbeTable(&b, table, nil)
			}
			fmt.Fprint(out, b.String())
		}
		if !f.watch {
			if err := probeVerdict(table); err != nil {
				return checkFailed{err}
			}
			return nil
		}
	}
}

// probeVerdict fails when the master did not answer, or when no replica is
// elected though there are replicas.
func probeVerdict(table []replica.NodeStatus) error {
	var replicas, elected int
	for _, n := range table {
		switch {
		case n.Role == replica.RoleMaster && !n.Healthy:
			return fmt.Errorf("the master %s did not answer the probe: %v", n.Addr, n.Err)
		case n.Role == replica.RoleReplica:
			replicas++
			if n.Elected {
				elected++
			}
		}
	}
	if replicas > 0 && elected == 0 {
		return errors.New("no replica is elected: reads that may go to a replica go to the master (see the table for why)")
	}
	return nil
}

// writeProbeTable writes the RTT table; name, when not nil, rewrites the
// addresses (the demo names its lab's nodes).
func writeProbeTable(w io.Writer, table []replica.NodeStatus, name func(string) string) {
	if name == nil {
		name = func(s string) string { return s }
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tRTT (EWMA)\tLAST\tSAMPLES\tLAG\tHEALTHY\tELECTION\tWHY")
	for _, n := range table {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", name(n.Addr), n.Role, rttText(n.RTT), rttText(n.LastRTT), n.Samples,
			lagText(n), yesNo(n.Healthy), electionText(n), name(n.Why))
	}
	_ = tw.Flush()
	for line := range strings.Lines(b.String()) {
		fmt.Fprintln(w, strings.TrimRight(line, " \n"))
	}
}

func rttText(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return d.Round(10 * time.Microsecond).String()
}

func lagText(n replica.NodeStatus) string {
	if n.Role != replica.RoleReplica {
		return "-"
	}
	if !n.LagKnown {
		return "unknown"
	}
	at := ""
	if n.LagAtLeast {
		at = "≥"
	}
	return fmt.Sprintf("%dB/%s%v", n.LagBytes, at, n.Lag.Round(time.Millisecond))
}

func electionText(n replica.NodeStatus) string {
	var parts []string
	switch {
	case n.Elected:
		parts = append(parts, "elected")
	case n.Excluded != replica.NotExcluded:
		parts = append(parts, "excluded: "+string(n.Excluded))
	case n.Role == replica.RoleReplica:
		parts = append(parts, "not elected")
	}
	if n.Nearest {
		parts = append(parts, "nearest")
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func addrList(a []string) string {
	if len(a) == 0 {
		return "none"
	}
	return strings.Join(a, ", ")
}

func nodeJSON(n replica.NodeStatus) probeNodeJSON {
	j := probeNodeJSON{Addr: n.Addr, Role: string(n.Role), RTTMS: ms(n.RTT), LastRTTMS: ms(n.LastRTT), Samples: n.Samples,
		Healthy: n.Healthy, Elected: n.Elected, Nearest: n.Nearest, Excluded: string(n.Excluded), Why: n.Why}
	if n.Err != nil {
		j.Error = n.Err.Error()
	}
	if n.LinkKnown {
		up := n.LinkUp
		j.LinkUp = &up
	}
	if n.LagKnown {
		b, l := n.LagBytes, ms(n.Lag)
		j.LagBytes, j.LagMS, j.LagAtLeast = &b, &l, n.LagAtLeast
	}
	return j
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
