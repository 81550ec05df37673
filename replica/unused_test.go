package replica

import (
	"slices"
	"strings"
	"testing"
)

func TestExplainUnused(t *testing.T) {
	why := UnusedWhy{Gone: "gone", Changing: "changing", Untabled: "untabled"}
	table := []NodeStatus{
		{Addr: "m:1", Role: RoleMaster},
		{Addr: "r:1", Role: RoleReplica, Excluded: ExcludedStale, Why: "lag 3s"},
		{Addr: "r:2", Role: RoleReplica, Excluded: ExcludedUnreachable, Why: "timeout"},
		{Addr: "r:3", Role: RoleReplica},
	}
	got := ExplainUnused(table, []string{"r:1", "r:3", "r:4"}, why)
	want := []Unused{
		{Addr: "r:1", Reason: ExcludedStale, Why: "lag 3s"},
		{Addr: "r:2", Why: "gone"},
		{Addr: "r:3", Why: "changing"},
		{Addr: "r:4", Why: "untabled"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ExplainUnused:\n got %+v\nwant %+v", got, want)
	}
	for _, tt := range []struct {
		rs   []Unused
		want string
	}{
		{nil, ": none"},
		{want, ": r:1 stale (lag 3s); r:2 (gone); r:3 (changing); r:4 (untabled)"},
	} {
		var b strings.Builder
		WriteUnused(&b, tt.rs, "none")
		if b.String() != tt.want {
			t.Errorf("WriteUnused: %q, want %q", b.String(), tt.want)
		}
	}
	if AwaitingProbe(table) || !AwaitingProbe([]NodeStatus{{Role: RoleReplica, Excluded: ExcludedUnprobed}}) {
		t.Error("AwaitingProbe: want true only with a replica not probed yet")
	}
}
