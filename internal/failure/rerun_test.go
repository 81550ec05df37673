package failure

import "testing"

func TestNext(t *testing.T) {
	tests := []struct {
		name string
		a    Attempt
		want Verdict
	}{
		{"read, first failure", Attempt{}, Rerun},
		{"read, re-run already", Attempt{Reran: true}, Fail},
		{"read not run, re-run already, node serves again", Attempt{Reran: true, NotExecuted: true, Again: true}, Rerun},
		{"read, moved", Attempt{Moved: true}, Rerun},
		{"write not run, moved", Attempt{Write: true, NotExecuted: true, Moved: true}, Rerun},
		{"write not run, same node serves again", Attempt{Write: true, NotExecuted: true, Again: true}, Rerun},
		{"write not run, nowhere to go", Attempt{Write: true, NotExecuted: true}, Fail},
		{"write not run, strict, moved", Attempt{Write: true, NotExecuted: true, Moved: true, Strict: true}, Refuse},
		{"write not run, strict, same node", Attempt{Write: true, NotExecuted: true, Again: true, Strict: true}, Fail},
		{"write may have run, moved", Attempt{Write: true, Moved: true}, Refuse},
		{"write may have run, same node", Attempt{Write: true, Again: true}, Fail},
		{"write may have run, nothing known", Attempt{Write: true}, Fail},
		{"exactly-once write may have run, moved", Attempt{Write: true, Moved: true, ExactlyOnce: true}, Rerun},
		{"exactly-once write may have run, same node", Attempt{Write: true, ExactlyOnce: true}, Rerun},
		{"exactly-once write, strict", Attempt{Write: true, Strict: true, ExactlyOnce: true}, Rerun},
		{"exactly-once read twice: the read rule", Attempt{Reran: true, ExactlyOnce: true}, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Next(tt.a); got != tt.want {
				t.Errorf("Next(%+v) = %s, want %s", tt.a, got, tt.want)
			}
		})
	}
}

// FuzzNext checks the promises every routed client relies on, for every
// combination: a write that may have run is never re-run; strict writes
// never are; only a write is refused; a read is re-run at most once
// unless it provably did not run.
func FuzzNext(f *testing.F) {
	f.Add(uint8(0))
	f.Add(uint8(0x3f))
	f.Fuzz(func(t *testing.T, bits uint8) {
		a := Attempt{Write: bits&1 != 0, NotExecuted: bits&2 != 0, Moved: bits&4 != 0, Again: bits&8 != 0, Reran: bits&16 != 0, Strict: bits&32 != 0}
		v := Next(a)
		switch {
		case v == Rerun && a.Write && !a.NotExecuted:
			t.Fatalf("%+v: a write that may have run is re-run", a)
		case v == Rerun && a.Write && a.Strict:
			t.Fatalf("%+v: a strict write is re-run", a)
		case v == Refuse && !a.Write:
			t.Fatalf("%+v: a read is refused", a)
		case v == Refuse && !a.Moved:
			t.Fatalf("%+v: refused as moved, but it did not move", a)
		case v == Rerun && !a.Write && a.Reran && !a.NotExecuted:
			t.Fatalf("%+v: a read that may have run is re-run twice", a)
		case v == Rerun && a.NotExecuted && !a.Moved && !a.Again && a.Write:
			t.Fatalf("%+v: a write re-run with nowhere to go", a)
		}
	})
}
