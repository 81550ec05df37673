package rediskit

// Kind is the topology a Client serves: which typed client it wraps.
//
//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=Kind -linecomment
type Kind int

// The kinds. In a Config, KindAuto (the zero value) lets the URL decide,
// with one probe for a plain redis:// or rediss:// URL (see "Choosing the
// topology" in the package documentation); any other value forces that
// kind, and a URL of another kind is refused with a *KindError.
const (
	KindAuto       Kind = iota // auto
	KindStandalone             // standalone
	KindSentinel               // sentinel
	KindCluster                // cluster
	KindMultiDB                // multidb
)
