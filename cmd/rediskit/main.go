package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// usageError marks errors in how the command was called (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func main() {
	// go-redis logs failed dials to stderr through its global logger; the
	// commands report failures themselves, in their own words.
	redis.SetLogger(discardLogger{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "rediskit: %v\n", err)
	var ue usageError
	if isRedisURLError(err) {
		return exitUsage
	}
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailed
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "rediskit",
		Short: "Diagnose Redis topologies, run local labs, tour rediskit",
		Long: `rediskit diagnoses Redis and Sentinel connections the way the rediskit
library sees them, checks write capability, inspects hash rings, runs local
labs and failover drills, and takes you on a guided tour.

Targets are URLs (redis://, rediss://, redis+sentinel://, rediss+sentinel://;
unix:// where a command says so), or --lab for a local lab started for the
command. Passwords come from the URL, or from REDISKIT_PASSWORD (data nodes)
and REDISKIT_SENTINEL_PASSWORD (sentinels) when the URL has none; they are
never printed. --timeout bounds every network step; --json prints the
report as JSON.

Exit codes: 0 ok, 1 the check failed, 2 usage error.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	groupCommand(root)
	// Flag and argument errors are usage errors (exit code 2).
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newCheckCommand(), newProbeCommand(), newHealthCommand(), newRingCommand(), newDrillCommand(),
		newLabCommand(), newDemoCommand())
	wrapArgs(root)
	return root
}

// groupCommand makes a command that only holds subcommands print its help
// when called alone, and refuse an unknown subcommand as a usage error:
// with Args set, cobra hands unknown subcommands to it instead of failing
// with an untyped error.
func groupCommand(c *cobra.Command) {
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}

// wrapArgs makes argument-count errors usage errors, recursively.
func wrapArgs(c *cobra.Command) {
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

// discardLogger drops go-redis's internal log lines.
type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}
