package redisinfo

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func cmdWith(v any) *redis.Cmd {
	c := redis.NewCmd(context.Background())
	c.SetVal(v)
	return c
}

func TestParseRole(t *testing.T) {
	tests := []struct {
		name  string
		reply any
		want  Role
		err   bool
	}{
		{"master", []any{"master", int64(3129), []any{[]any{"127.0.0.1", "9001", "3129"}, []any{"::1", "9002", "3100"}}},
			Role{Role: "master", Offset: 3129, Replicas: []ReplicaOffset{{"127.0.0.1:9001", 3129}, {"[::1]:9002", 3100}}}, false},
		{"master without replicas", []any{"master", int64(0), []any{}}, Role{Role: "master"}, false},
		{"replica", []any{"slave", "127.0.0.1", int64(9000), "connected", int64(3167)},
			Role{Role: "slave", MasterAddr: "127.0.0.1:9000", LinkState: "connected", Offset: 3167}, false},
		{"sentinel", []any{"sentinel", []any{"mymaster"}}, Role{Role: "sentinel"}, false},
		{"short master", []any{"master"}, Role{Role: "master"}, true},
		{"short replica", []any{"slave", "h"}, Role{Role: "slave"}, true},
		{"empty", []any{}, Role{}, true},
	}
	for _, tt := range tests {
		got, err := ParseRole(cmdWith(tt.reply))
		if (err != nil) != tt.err || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: ParseRole = %+v, %v; want %+v (error %v)", tt.name, got, err, tt.want, tt.err)
		}
	}
}

func TestParseInfo(t *testing.T) {
	got := ParseInfo("# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\nslave0:ip=1.2.3.4,port=6380\r\n\r\n# Other\r\nbad line\r\n")
	want := map[string]string{"role": "slave", "master_host": "127.0.0.1", "slave0": "ip=1.2.3.4,port=6380"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParseInfo = %v, want %v", got, want)
	}
}

func TestParseTableBothProtocols(t *testing.T) {
	resp2 := []any{[]any{"ip", "127.0.0.1", "port", "6380", "flags", "slave,s_down"}}
	resp3 := []any{map[any]any{"ip": "127.0.0.1", "port": "6380", "flags": "slave,s_down"}}
	for _, reply := range []any{resp2, resp3} {
		rows, err := ParseTable(cmdWith(reply))
		if err != nil || len(rows) != 1 || Addr(rows[0]) != "127.0.0.1:6380" ||
			!HasFlag(rows[0]["flags"], "s_down") || HasFlag(rows[0]["flags"], "down") {
			t.Fatalf("ParseTable(%v) = %v, %v", reply, rows, err)
		}
	}
	fields, err := ParseFields(cmdWith(map[any]any{"config-epoch": "3"}))
	if err != nil || fields["config-epoch"] != "3" {
		t.Fatalf("ParseFields = %v, %v", fields, err)
	}
}

func TestParseServerVersion(t *testing.T) {
	tests := []struct {
		info    map[string]string
		want    ServerVersion
		str     string
		atLeast [2]int
		wantErr bool
	}{
		{map[string]string{"redis_version": "7.0.15"}, ServerVersion{Name: "redis", Version: "7.0.15", Major: 7, Minor: 0, Patch: 15}, "Redis 7.0.15", [2]int{7, 0}, false},
		// Valkey's redis_version is the Redis version it is compatible with.
		{map[string]string{"redis_version": "7.2.4", "server_name": "valkey", "valkey_version": "8.0.1"},
			ServerVersion{Name: "valkey", Version: "8.0.1", Major: 8, Minor: 0, Patch: 1}, "Valkey 8.0.1", [2]int{7, 2}, false},
		{map[string]string{"redis_version": "8.0.2", "server_name": "redis"}, ServerVersion{Name: "redis", Version: "8.0.2", Major: 8, Patch: 2}, "Redis 8.0.2", [2]int{8, 0}, false},
		{map[string]string{"redis_version": "255.255.255"}, ServerVersion{Name: "redis", Version: "255.255.255", Major: 255, Minor: 255, Patch: 255}, "Redis 255.255.255", [2]int{7, 2}, false},
		{map[string]string{}, ServerVersion{}, "", [2]int{}, true},
		{map[string]string{"redis_version": "7.x"}, ServerVersion{}, "", [2]int{}, true},
	}
	for _, tt := range tests {
		got, err := ParseServerVersion(tt.info)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseServerVersion(%v) = %v, want an error", tt.info, got)
			}
			continue
		}
		if err != nil || got != tt.want || got.String() != tt.str || !got.AtLeast(tt.atLeast[0], tt.atLeast[1]) {
			t.Errorf("ParseServerVersion(%v) = %+v %q %v, want %+v %q, at least %v", tt.info, got, got, err, tt.want, tt.str, tt.atLeast)
		}
	}
	if (ServerVersion{Name: "redis", Major: 7, Minor: 0}).AtLeast(7, 2) {
		t.Error("7.0 is at least 7.2")
	}
}

func TestParseMasterReplication(t *testing.T) {
	tests := []struct {
		name      string
		text      string
		wantRole  Role
		wantLinks []ReplicaLink
		wantErr   bool
	}{
		{
			name: "two replicas, one syncing",
			text: "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n" +
				"slave0:ip=127.0.0.1,port=7001,state=online,offset=1234,lag=0\r\n" +
				"slave1:ip=::1,port=7002,state=send_bulk,offset=0,lag=3\r\nmaster_repl_offset:1300\r\n",
			wantRole: Role{Role: "master", Offset: 1300, Replicas: []ReplicaOffset{{"127.0.0.1:7001", 1234}, {"[::1]:7002", 0}}},
			wantLinks: []ReplicaLink{
				{Addr: "127.0.0.1:7001", State: "online", Offset: 1234, Lag: 0},
				{Addr: "[::1]:7002", State: "send_bulk", Offset: 0, Lag: 3 * time.Second},
			},
		},
		{
			name:      "no lag field, a broken line skipped",
			text:      "role:master\r\nconnected_slaves:2\r\nslave0:ip=h,port=1,state=online,offset=5\r\nslave1:garbage\r\nmaster_repl_offset:9\r\n",
			wantRole:  Role{Role: "master", Offset: 9, Replicas: []ReplicaOffset{{"h:1", 5}}},
			wantLinks: []ReplicaLink{{Addr: "h:1", State: "online", Offset: 5, Lag: -1}},
		},
		{
			name:     "a huge replica count does not size anything",
			text:     "role:master\r\nconnected_slaves:99999999999\r\nmaster_repl_offset:1\r\n",
			wantRole: Role{Role: "master", Offset: 1},
		},
		{name: "a replica", text: "role:slave\r\nmaster_host:h\r\n", wantRole: Role{Role: "slave"}},
		{name: "no role", text: "connected_slaves:0\r\n", wantErr: true},
		{name: "no offset", text: "role:master\r\n", wantRole: Role{Role: "master"}, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			role, links, err := ParseMasterReplication(ParseInfo(tc.text))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !reflect.DeepEqual(role, tc.wantRole) || !reflect.DeepEqual(links, tc.wantLinks) {
				t.Fatalf("got %+v %+v, want %+v %+v", role, links, tc.wantRole, tc.wantLinks)
			}
		})
	}
}
