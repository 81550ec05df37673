package classify

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
)

// What a read-only replica and the master do with "EVAL body 0".
type evalOutcome int

const (
	// runs on the replica (and the master)
	runsAnywhere evalOutcome = iota
	// the replica refuses it (READONLY: the script may write); the master runs it
	replicaRefuses
	// fails on both, with the same error (Redis rejects the shebang or the script)
	failsEverywhere
)

var shebangCases = []struct {
	name     string
	body     string
	readOnly bool // the classifier's answer
	redis    evalOutcome
}{
	{"no-writes", "#!lua flags=no-writes\nreturn 1", true, runsAnywhere},
	{"no-writes with allow-stale", "#!lua flags=no-writes,allow-stale\nreturn 1", true, runsAnywhere},
	{"every flag", "#!lua flags=no-cluster,no-writes,allow-cross-slot-keys,allow-oom,allow-stale\nreturn 1", true, runsAnywhere},
	{"flags twice", "#!lua flags=allow-oom flags=no-writes\nreturn 1", true, runsAnywhere},
	{"no-writes twice", "#!lua flags=no-writes,no-writes\nreturn 1", true, runsAnywhere},
	{"extra spaces", "#!lua  flags=no-writes \nreturn 1", true, runsAnywhere},
	{"tab and CRLF", "#!lua\tflags=no-writes\r\nreturn 1", true, runsAnywhere},
	{"no-writes script that writes", "#!lua flags=no-writes\nreturn redis.call('SET', 'k', 'v')", true, failsEverywhere},

	{"no shebang", "return 1", false, runsAnywhere},
	{"empty body", "", false, runsAnywhere},
	{"shebang without flags", "#!lua\nreturn 1", false, replicaRefuses},
	{"empty flags", "#!lua flags=\nreturn 1", false, replicaRefuses},
	{"flags without no-writes", "#!lua flags=allow-oom,allow-stale\nreturn 1", false, replicaRefuses},
	{"name= is for FUNCTION LOAD", "#!lua name=x flags=no-writes,allow-stale\nreturn 1", false, failsEverywhere},
	{"leading space", " #!lua flags=no-writes\nreturn 1", false, failsEverywhere},
	{"leading newline", "\n#!lua flags=no-writes\nreturn 1", false, failsEverywhere},
	{"leading tab", "\t#!lua flags=no-writes\nreturn 1", false, failsEverywhere},
	{"no newline", "#!lua flags=no-writes", false, failsEverywhere},
	{"upper-case flag", "#!lua flags=NO-WRITES\nreturn 1", false, failsEverywhere},
	{"upper-case engine", "#!LUA flags=no-writes\nreturn 1", false, failsEverywhere},
	{"space after #!", "#! lua flags=no-writes\nreturn 1", false, failsEverywhere},
	{"other engine", "#!luajit flags=no-writes\nreturn 1", false, failsEverywhere},
	{"trailing comma", "#!lua flags=no-writes,\nreturn 1", false, failsEverywhere},
	{"leading comma", "#!lua flags=,no-writes\nreturn 1", false, failsEverywhere},
	{"unknown flag", "#!lua flags=no-writes,no-reads\nreturn 1", false, failsEverywhere},
	{"flag as its own word", "#!lua flags=no-writes allow-oom\nreturn 1", false, failsEverywhere},
	{"CR is not a line end", "#!lua flags=no-writes\rreturn 1\n", false, failsEverywhere},
	{"vertical tab joins words", "#!lua\vflags=no-writes\nreturn 1", false, failsEverywhere},
	// Redis's splitter accepts quoted words; the classifier does not parse
	// them and keeps such a script on the master (documented).
	{"quoted flags (conservative)", "#!lua \"flags=no-writes\"\nreturn 1", false, runsAnywhere},
}

func TestShebang(t *testing.T) {
	c := New()
	for _, tt := range shebangCases {
		if got := shebangNoWrites(tt.body); got != tt.readOnly {
			t.Errorf("%s: shebangNoWrites(%q) = %v, want %v", tt.name, tt.body, got, tt.readOnly)
		}
		if got := c.ReadOnlyArgs("EVAL", tt.body, 0); got != tt.readOnly {
			t.Errorf("%s: ReadOnlyArgs(EVAL %q 0) = %v, want %v", tt.name, tt.body, got, tt.readOnly)
		}
		if got := c.ReadOnlyArgs("EVAL", []byte(tt.body), 0); got != tt.readOnly {
			t.Errorf("%s: ReadOnlyArgs(EVAL []byte(%q) 0) = %v, want %v", tt.name, tt.body, got, tt.readOnly)
		}
		if c.ReadOnlyArgs("EVALSHA", tt.body, 0) {
			t.Errorf("%s: EVALSHA is read-only", tt.name)
		}
		if tt.readOnly && tt.redis == replicaRefuses {
			t.Errorf("%s: case is inconsistent: read-only, but a replica refuses it", tt.name)
		}
	}
}

// TestShebangAgainstRedis runs every shebang case on a real read-only
// replica and on its master, and checks that Redis does what the case
// says. Together with TestShebang this shows that whenever the classifier
// sends EVAL to a replica, the replica runs it (or Redis rejects the script
// everywhere, so the route does not matter).
func TestShebangAgainstRedis(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Replicated(1))
	master := l.Node(0).NewClient()
	defer master.Close()
	replica := l.Node(1).NewClient()
	defer replica.Close()
	if ro, err := replica.ConfigGet(ctx, "replica-read-only").Result(); err != nil || ro["replica-read-only"] != "yes" {
		t.Fatalf("replica-read-only = %v, %v", ro, err)
	}
	for _, tt := range shebangCases {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.body, "SET") {
				// Writing scripts must not change the data the others see.
				defer master.Del(ctx, "k")
			}
			replicaErr := replica.Eval(ctx, tt.body, nil).Err()
			masterErr := master.Eval(ctx, tt.body, nil).Err()
			if replicaErr == redis.Nil {
				replicaErr = nil
			}
			if masterErr == redis.Nil {
				masterErr = nil
			}
			switch tt.redis {
			case runsAnywhere:
				if replicaErr != nil || masterErr != nil {
					t.Errorf("want it to run everywhere; replica: %v, master: %v", replicaErr, masterErr)
				}
			case replicaRefuses:
				if replicaErr == nil || !redis.IsReadOnlyError(replicaErr) || masterErr != nil {
					t.Errorf("want READONLY on the replica and success on the master; replica: %v, master: %v", replicaErr, masterErr)
				}
			case failsEverywhere:
				if replicaErr == nil || masterErr == nil || replicaErr.Error() != masterErr.Error() {
					t.Errorf("want the same error everywhere; replica: %v, master: %v", replicaErr, masterErr)
				}
			}
			if tt.readOnly && tt.redis == replicaRefuses {
				t.Errorf("classified read-only but the replica refuses it: %v", replicaErr)
			}
		})
	}
}
