package guard_test

import (
	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/sentinel"
)

// The errors of sentinel and multidb that mean "try again" are
// guard.Transient, without guard importing them. What they answer over
// HTTP is tested in package httpguard.
var (
	_ guard.Transient = (*sentinel.NodeError)(nil)
	_ guard.Transient = (*sentinel.WriteHeldError)(nil)
	_ guard.Transient = (*sentinel.MasterChangedError)(nil)
	_ guard.Transient = (*sentinel.NotDurableError)(nil)
	_ guard.Transient = (*sentinel.NoReplicaError)(nil)
	_ guard.Transient = (*sentinel.DiscoveryError)(nil)
	_ guard.Transient = (*multidb.UnavailableError)(nil)
	_ guard.Transient = (*multidb.DatabaseChangedError)(nil)
)
