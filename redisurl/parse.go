package redisurl

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

const schemeHint = "want redis://, rediss://, unix://, redis+sentinel://, rediss+sentinel://, redis+cluster:// or rediss+cluster://"

// paramNames are the query parameters Parse knows.
func paramNames() []string {
	return []string{
		"sentinelUser", "sentinelPassword", "readFrom", "preferReplica",
		"dialTimeout", "readTimeout", "writeTimeout", "clientName",
		"caFile", "certFile", "keyFile", "serverName", "insecureSkipVerify", "db", "addr",
	}
}

func isParam(name string) bool { return slices.Contains(paramNames(), name) }

// Parse reads a connection URL into a Config:
//
//	redis://[user:password@]host[:port][/db][?params]
//	rediss://…                                          (TLS)
//	unix://[user:password@]/path/to/redis.sock[?db=N&params]
//	redis+sentinel://[user:password@]host1[:port],host2[:port]/masterName[/db][?params]
//	rediss+sentinel://…                                 (TLS to sentinels and data nodes)
//	redis+cluster://[user:password@]host1[:port],host2[:port][?params]
//	rediss+cluster://…                                  (TLS to every cluster node)
//	redis://[user:password@]host[:port]?addr=host2:port[&addr=…][&params]
//	                                                    (go-redis's cluster form: a Cluster)
//
// Leading and trailing white space is ignored. The package documentation
// lists the parameters and the rules; every error is an *Error and never
// contains a password.
func Parse(rawURL string) (*Config, error) {
	p := parser{raw: strings.TrimSpace(rawURL), seen: map[string]span{}}
	c, err := p.parse()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// span is a byte range of the URL being parsed.
type span struct{ start, end int }

type parser struct {
	raw string
	// secrets are the ranges of raw that may hold a password: errors never
	// quote text that overlaps them.
	secrets []span
	seen    map[string]span // parameters given, by name, with their value's span
	dbSet   bool
	db      span   // where the database number was written, when dbSet
	addrs   []span // the values of the addr parameters (go-redis's cluster form), in order
}

func (p *parser) text(s span) string { return p.raw[s.start:s.end] }

// fail builds an error about the text at s, quoting it unless it may hold a
// password.
func (p *parser) fail(field string, s span, reason, hint string) *Error {
	e := &Error{Field: field, Reason: reason, Hint: hint}
	if s.end <= s.start {
		return e
	}
	for _, z := range p.secrets {
		if s.start < z.end && z.start < s.end {
			if e.Hint != "" {
				e.Hint += "; "
			}
			e.Hint += "not shown: it may hold a password; percent-encode '@', '/', '?', '#', '&' and '%' in passwords"
			return e
		}
	}
	e.Value = p.text(s)
	return e
}

// markSecrets records where passwords may be, before anything is parsed,
// so that even a URL that is broken because of a password is reported
// without it: everything between "://" and the last '@' (the userinfo,
// however the password splits it), and everything after "password=" in
// any letter case (the value of sentinelPassword, or of a password
// parameter someone tried, with whatever follows: an unencoded '&' in the
// password would make its tail look like more parameters).
func (p *parser) markSecrets(afterScheme int) {
	if at := strings.LastIndexByte(p.raw[afterScheme:], '@'); at >= 0 {
		p.secrets = append(p.secrets, span{afterScheme, afterScheme + at})
	}
	if i := indexFoldASCII(p.raw, "password="); i >= 0 {
		p.secrets = append(p.secrets, span{i + len("password="), len(p.raw)})
	}
}

// indexFoldASCII is strings.Index ignoring ASCII case, with byte offsets
// into s (strings.ToLower may change the length of non-ASCII text).
func indexFoldASCII(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

func (p *parser) parse() (*Config, error) {
	raw := p.raw
	sep := strings.Index(raw, "://")
	if sep < 0 || !isSchemeSyntax(raw[:sep]) {
		return nil, &Error{Field: "scheme", Reason: ReasonMissing, Hint: schemeHint}
	}
	p.markSecrets(sep + 3)
	c := &Config{ReadFrom: Master}
	switch strings.ToLower(raw[:sep]) {
	case "redis":
		c.Kind = Standalone
	case "rediss":
		c.Kind, c.TLS = Standalone, true
	case "unix":
		c.Kind = Unix
	case "redis+sentinel":
		c.Kind = Sentinel
	case "rediss+sentinel":
		c.Kind, c.TLS = Sentinel, true
	case "redis+cluster":
		c.Kind = Cluster
	case "rediss+cluster":
		c.Kind, c.TLS = Cluster, true
	default:
		hint := schemeHint
		if m := closest(raw[:sep], "redis", "rediss", "unix", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster"); m != "" {
			hint = "did you mean " + m + "://?"
		}
		return nil, p.fail("scheme", span{0, sep}, ReasonUnknown, hint)
	}

	start := sep + 3
	if strings.IndexByte(raw[start:], '#') >= 0 {
		return nil, &Error{Field: "URL", Reason: "has a fragment ('#')", Hint: "a '#' in a password must be written %23"}
	}
	authEnd := len(raw)
	if i := strings.IndexAny(raw[start:], "/?"); i >= 0 {
		authEnd = start + i
	}
	queryAt := len(raw)
	if i := strings.IndexByte(raw[authEnd:], '?'); i >= 0 {
		queryAt = authEnd + i
	}
	hostStart := start
	if at := strings.LastIndexByte(raw[start:authEnd], '@'); at >= 0 {
		if err := p.userinfo(c, span{start, start + at}); err != nil {
			return nil, err
		}
		hostStart = start + at + 1
	}
	hosts, path := span{hostStart, authEnd}, span{authEnd, queryAt}

	var err error
	switch c.Kind {
	case Standalone:
		err = p.standalone(c, hosts, path)
	case Unix:
		err = p.unix(c, hosts, path)
	case Sentinel:
		err = p.sentinel(c, hosts, path)
	case Cluster:
		err = p.cluster(c, hosts, path)
	}
	if err != nil {
		return nil, err
	}
	if queryAt < len(raw) {
		if err := p.query(c, span{queryAt + 1, len(raw)}); err != nil {
			return nil, err
		}
	}
	if len(p.addrs) > 0 {
		if err := p.goRedisCluster(c); err != nil {
			return nil, err
		}
	}
	if err := p.check(c); err != nil {
		return nil, err
	}
	return c, nil
}

func isSchemeSyntax(s string) bool {
	if s == "" || len(s) > 32 || (s[0] < 'a' || s[0] > 'z') && (s[0] < 'A' || s[0] > 'Z') {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !isUnreserved(c) && c != '+' || c == '_' || c == '~' {
			return false
		}
	}
	return true
}

func (p *parser) userinfo(c *Config, s span) error {
	user, pass, _ := strings.Cut(p.text(s), ":")
	u, ok := unescape(user)
	if !ok {
		return &Error{Field: "userinfo", Reason: "invalid percent-encoding in the username", Hint: "write '%' as %25"}
	}
	pw, ok := unescape(pass)
	if !ok {
		return &Error{Field: "userinfo", Reason: "invalid percent-encoding in the password", Hint: "write '%' as %25"}
	}
	if u != "" && pw == "" {
		return &Error{Field: "userinfo", Reason: "a username needs a password", Hint: "redis://user:password@host"} //nolint:gosec // a placeholder in a hint, not a credential
	}
	c.Username, c.Password = u, pw
	return nil
}

func (p *parser) standalone(c *Config, hosts, path span) error {
	if hosts.start == hosts.end {
		return p.fail("address", hosts, ReasonMissing, "redis://host:port")
	}
	if strings.IndexByte(p.text(hosts), ',') >= 0 {
		return p.fail("address", hosts, "several addresses", "only redis+sentinel:// and redis+cluster:// (and their rediss+ forms) list several servers")
	}
	addr, err := p.hostPort("address", hosts, p.text(hosts), "6379")
	if err != nil {
		return err
	}
	c.Addr = addr
	segs, err := p.segments(path, 1, "want /db")
	if err != nil || len(segs) == 0 {
		return err
	}
	return p.setDB(c, segs[0])
}

func (p *parser) unix(c *Config, hosts, path span) error {
	if hosts.start != hosts.end {
		return p.fail("address", hosts, "a unix:// URL has no host", "unix:///path/to/redis.sock")
	}
	if t := p.text(path); t == "" || t == "/" {
		return &Error{Field: "socket path", Reason: ReasonMissing, Hint: "unix:///path/to/redis.sock"}
	}
	sp, ok := unescape(p.text(path))
	if !ok {
		return p.fail("socket path", path, "invalid percent-encoding", "write '%' as %25")
	}
	c.SocketPath = sp
	return nil
}

func (p *parser) sentinel(c *Config, hosts, path span) error {
	sentinels, err := p.hostList("sentinel address", hosts, "26379", "redis+sentinel://host1:26379,host2:26379/mymaster")
	if err != nil {
		return err
	}
	c.Sentinels = sentinels
	segs, err := p.segments(path, 2, "want /masterName or /masterName/db")
	if err != nil {
		return err
	}
	if len(segs) == 0 || segs[0].start == segs[0].end {
		return &Error{Field: "master name", Reason: ReasonMissing, Hint: "redis+sentinel://host:26379/mymaster[/db]"}
	}
	name, ok := unescape(p.text(segs[0]))
	if !ok {
		return p.fail("master name", segs[0], "invalid percent-encoding", "write '%' as %25")
	}
	c.MasterName = name
	if len(segs) == 2 {
		return p.setDB(c, segs[1])
	}
	return nil
}

// cluster reads a redis+cluster:// URL's seed nodes and its optional
// database, which can only be 0 (check refuses another).
func (p *parser) cluster(c *Config, hosts, path span) error {
	addrs, err := p.hostList("address", hosts, "6379", "redis+cluster://host1:6379,host2:6379")
	if err != nil {
		return err
	}
	c.Addrs = addrs
	segs, err := p.segments(path, 1, "a cluster URL has no path but an optional /0: Redis Cluster has only database 0")
	if err != nil || len(segs) == 0 {
		return err
	}
	return p.setDB(c, segs[0])
}

// goRedisCluster turns a redis:// or rediss:// URL with addr parameters
// (go-redis's cluster form) into a Cluster whose seeds are the host, then
// every addr in order.
func (p *parser) goRedisCluster(c *Config) error {
	if c.Kind != Standalone {
		hint := "the seeds of a redis+cluster:// URL all go in its host list: redis+cluster://host1,host2"
		switch c.Kind {
		case Sentinel:
			hint = "the sentinels go in the host list; go-redis's failover URL (master_name, addr) is read with ParseFailoverURL"
		case Unix:
			hint = "a unix:// URL names one server; a cluster URL is redis+cluster://host1,host2"
		}
		return &Error{Field: "addr", Reason: "only in go-redis's cluster URL form, redis://host1?addr=host2", Hint: hint}
	}
	var seeds addrSet
	seeds.init(1 + len(p.addrs))
	seeds.add(c.Addr)
	for _, vs := range p.addrs {
		v, ok := unescape(p.text(vs))
		if !ok {
			return p.fail("addr", vs, "invalid percent-encoding", "write '%' as %25")
		}
		// hostPort reads an IPv6 zone written %25, as in the host list:
		// the decoded value has a bare '%' there.
		addr, err := p.hostPort("addr", vs, strings.ReplaceAll(v, "%", "%25"), "6379")
		if err != nil {
			return err
		}
		if !seeds.add(addr) {
			return p.fail("addr", vs, "listed twice", "")
		}
	}
	c.Kind, c.Addr, c.Addrs = Cluster, "", seeds.addrs
	return nil
}

// hostList reads a comma-separated list of host[:port] addresses, with
// defaultPort where none is given, refusing an empty list (with
// missingHint), empty entries and repeated ones.
func (p *parser) hostList(field string, hosts span, defaultPort, missingHint string) ([]string, error) {
	if hosts.start == hosts.end {
		return nil, p.fail(field, hosts, ReasonMissing, missingHint)
	}
	pos := hosts.start
	list := p.text(hosts)
	var set addrSet
	set.init(strings.Count(list, ",") + 1)
	for rest, more := list, true; more; {
		var piece string
		piece, rest, more = strings.Cut(rest, ",")
		s := span{pos, pos + len(piece)}
		pos = s.end + 1
		if piece == "" {
			return nil, p.fail(field, hosts, "empty address in the list", "")
		}
		addr, err := p.hostPort(field, s, piece, defaultPort)
		if err != nil {
			return nil, err
		}
		if !set.add(addr) {
			return nil, p.fail(field, s, "listed twice", "")
		}
	}
	return set.addrs, nil
}

// addrSet is a list of addresses in order that refuses repeats. A set of
// the addresses so far finds a repeated one in constant time: comparing
// each address with every earlier one made Parse quadratic in the number
// of sentinels (16,000 took 0.3 s to over a second). Short lists, the
// usual case, are still compared directly, without building the set.
type addrSet struct {
	addrs []string
	seen  map[string]struct{}
}

// init sizes the set for n addresses.
func (s *addrSet) init(n int) {
	s.addrs = make([]string, 0, n)
	if n > smallSentinelList {
		s.seen = make(map[string]struct{}, n)
	}
}

// add appends addr, or reports false if it is already there.
func (s *addrSet) add(addr string) bool {
	if s.seen != nil {
		if _, dup := s.seen[addr]; dup {
			return false
		}
		s.seen[addr] = struct{}{}
	} else if slices.Contains(s.addrs, addr) {
		return false
	}
	s.addrs = append(s.addrs, addr)
	return true
}

// smallSentinelList is the longest address list (sentinels or cluster
// seeds) whose addresses are checked for repeats by comparing each with
// the earlier ones (at most 28 comparisons) rather than through a map,
// which would cost an allocation for the three or five addresses of a
// usual URL.
const smallSentinelList = 8

// segments splits a path ("/a/b") into at most max segments; one trailing
// slash is ignored.
func (p *parser) segments(path span, most int, hint string) ([]span, error) {
	t := p.text(path)
	if t == "" || t == "/" {
		return nil, nil
	}
	body := span{path.start + 1, path.end}
	if strings.HasSuffix(t, "/") {
		body.end--
	}
	var segs []span
	pos := body.start
	for _, s := range strings.Split(p.text(body), "/") {
		segs = append(segs, span{pos, pos + len(s)})
		pos += len(s) + 1
	}
	if len(segs) > most {
		return nil, p.fail("path", path, "too many segments", hint)
	}
	return segs, nil
}

func (p *parser) setDB(c *Config, s span) error {
	if p.dbSet {
		return p.fail("db", s, "given twice", "in the path and as ?db=")
	}
	p.dbSet, p.db = true, s
	t := p.text(s)
	n, err := strconv.ParseUint(t, 10, 31)
	if err != nil || t == "" || t[0] == '+' {
		return p.fail("db", s, "not a database number", "a number from 0")
	}
	c.DB = int(n)
	return nil
}

// hostPort reads text, "host[:port]" or "[ipv6][:port]" written at s in
// the URL (text is p.text(s), or its decoded value for a parameter), and
// returns host:port.
func (p *parser) hostPort(field string, s span, text, defaultPort string) (string, error) {
	var host, port string
	portGiven := false
	if strings.HasPrefix(text, "[") {
		end := strings.IndexByte(text, ']')
		if end < 0 {
			return "", p.fail(field, s, "unclosed '['", "")
		}
		after := text[end+1:]
		switch {
		case after == "":
		case after[0] == ':':
			port, portGiven = after[1:], true
		default:
			return "", p.fail(field, s, "unexpected text after ']'", "")
		}
		ip, zone, hasZone := strings.Cut(text[1:end], "%25")
		if hasZone && !isHostname(zone) {
			return "", p.fail(field, s, "invalid IPv6 zone", "write the zone as %25zone")
		}
		if net.ParseIP(ip) == nil || !strings.Contains(ip, ":") {
			return "", p.fail(field, s, "invalid IPv6 address", "")
		}
		host = ip
		if hasZone {
			host += "%" + zone
		}
	} else {
		if strings.Count(text, ":") > 1 {
			return "", p.fail(field, s, "IPv6 address not in brackets", "write [::1]:6379")
		}
		host, port, portGiven = strings.Cut(text, ":")
		if host == "" {
			return "", p.fail(field, s, "missing host", "")
		}
		if !isHostname(host) {
			return "", p.fail(field, s, "invalid host", "a host name or IP address")
		}
	}
	if !portGiven {
		return net.JoinHostPort(host, defaultPort), nil
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 || port[0] == '+' {
		return "", p.fail(field, s, "invalid port", "a number from 1 to 65535")
	}
	return net.JoinHostPort(host, strconv.FormatUint(n, 10)), nil
}

func isHostname(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isUnreserved(c) || c == '~' {
			return false
		}
	}
	return true
}

func (p *parser) query(c *Config, s span) error {
	pos := s.start
	for _, piece := range strings.Split(p.text(s), "&") {
		ps := span{pos, pos + len(piece)}
		pos = ps.end + 1
		if piece == "" {
			continue
		}
		name, _, hasValue := strings.Cut(piece, "=")
		ns := span{ps.start, ps.start + len(name)}
		vs := span{ns.end + 1, ps.end}
		if !isParam(name) {
			return p.fail("parameter", ns, ReasonUnknown, paramHint(name))
		}
		if _, dup := p.seen[name]; dup && name != "addr" {
			return p.fail(name, vs, "given twice", "")
		}
		if !hasValue || vs.start == vs.end {
			return &Error{Field: name, Reason: "needs a value"}
		}
		p.seen[name] = vs
		if err := p.param(c, name, vs); err != nil {
			return err
		}
	}
	if _, ok := p.seen["preferReplica"]; ok {
		if _, ok := p.seen["readFrom"]; ok {
			return &Error{Field: "preferReplica", Reason: "given with readFrom", Hint: "give one of them; preferReplica=true is readFrom=replicaPreferred"}
		}
	}
	return nil
}

func (p *parser) param(c *Config, name string, vs span) error {
	switch name {
	case "db":
		return p.setDB(c, vs)
	case "addr": // read once the URL's kind is known (goRedisCluster)
		p.addrs = append(p.addrs, vs)
		return nil
	}
	v, ok := unescape(p.text(vs))
	if !ok {
		return p.fail(name, vs, "invalid percent-encoding", "write '%' as %25")
	}
	switch name {
	case "sentinelUser", "sentinelPassword", "caFile", "certFile", "keyFile", "serverName":
		*c.textParam(name) = v
	case "dialTimeout", "readTimeout", "writeTimeout":
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return p.fail(name, vs, "not a positive Go duration", "such as 500ms or 2s")
		}
		*c.durationParam(name) = d
	case "readFrom":
		rf, err := ParseReadFrom(v)
		if err != nil {
			return p.fail(name, vs, "unknown value", "want master, replica, replicaPreferred or nearest")
		}
		c.ReadFrom = rf
	case "preferReplica":
		b, err := p.boolean(name, vs, v)
		if err != nil {
			return err
		}
		if b {
			c.ReadFrom = ReplicaPreferred
		}
	case "insecureSkipVerify":
		b, err := p.boolean(name, vs, v)
		if err != nil {
			return err
		}
		c.InsecureSkipVerify = b
	case "clientName":
		for i := 0; i < len(v); i++ {
			if v[i] < '!' || v[i] > '~' {
				return p.fail(name, vs, "not a valid client name", "Redis refuses spaces, newlines and other special characters")
			}
		}
		c.ClientName = v
	}
	return nil
}

// textParam is the field a text parameter sets.
func (c *Config) textParam(name string) *string {
	switch name {
	case "sentinelUser":
		return &c.SentinelUsername
	case "sentinelPassword":
		return &c.SentinelPassword
	case "caFile":
		return &c.CAFile
	case "certFile":
		return &c.CertFile
	case "keyFile":
		return &c.KeyFile
	}
	return &c.ServerName
}

// durationParam is the field a timeout parameter sets.
func (c *Config) durationParam(name string) *time.Duration {
	switch name {
	case "dialTimeout":
		return &c.DialTimeout
	case "readTimeout":
		return &c.ReadTimeout
	}
	return &c.WriteTimeout
}

func (p *parser) boolean(name string, vs span, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, p.fail(name, vs, "not true or false", "")
}

// check applies the rules between parameters and the scheme.
func (p *parser) check(c *Config) error {
	for _, name := range []string{"caFile", "certFile", "keyFile", "serverName", "insecureSkipVerify"} {
		if _, ok := p.seen[name]; ok && !c.TLS {
			return &Error{Field: name, Reason: "needs TLS", Hint: "use rediss://, rediss+sentinel:// or rediss+cluster://"}
		}
	}
	for _, name := range []string{"sentinelUser", "sentinelPassword", "preferReplica"} {
		if _, ok := p.seen[name]; ok && c.Kind != Sentinel {
			hint := "use redis+sentinel:// or rediss+sentinel://"
			if name == "preferReplica" && c.Kind == Cluster {
				hint = "on a cluster URL write readFrom=replicaPreferred"
			}
			return &Error{Field: name, Reason: "only for sentinel URLs", Hint: hint}
		}
	}
	if _, ok := p.seen["readFrom"]; ok && c.Kind != Sentinel && c.Kind != Cluster {
		return &Error{Field: "readFrom", Reason: "only for sentinel and cluster URLs",
			Hint: "use redis+sentinel:// or redis+cluster:// (or their rediss+ forms); a single server has no replicas to read from"}
	}
	if c.Kind == Cluster && c.DB != 0 {
		return p.fail("db", p.db, "Redis Cluster has only database 0", "remove the database from the URL")
	}
	switch {
	case c.CertFile != "" && c.KeyFile == "":
		return &Error{Field: "keyFile", Reason: ReasonMissing, Hint: "certFile needs keyFile"}
	case c.KeyFile != "" && c.CertFile == "":
		return &Error{Field: "certFile", Reason: ReasonMissing, Hint: "keyFile needs certFile"}
	case c.SentinelUsername != "" && c.SentinelPassword == "":
		return &Error{Field: "sentinelPassword", Reason: ReasonMissing, Hint: "sentinelUser needs sentinelPassword"}
	}
	return nil
}

// paramHint suggests the parameter an unknown name was meant to be.
func paramHint(name string) string {
	norm := strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(name))
	switch norm {
	case "password", "pass", "username", "user", "auth":
		return "put the data nodes' credentials in the URL: redis://user:password@host"
	case "sentinelusername":
		return "did you mean sentinelUser?"
	case "mastername":
		return "master_name is go-redis's failover URL (read it with ParseFailoverURL); the sentinel URL is redis+sentinel://host1,host2/mymaster"
	}
	for _, k := range paramNames() {
		if strings.EqualFold(k, norm) {
			return "did you mean " + k + "? Names are case-sensitive"
		}
	}
	if m := closest(name, paramNames()...); m != "" {
		return "did you mean " + m + "?"
	}
	return "known: " + strings.Join(paramNames(), ", ")
}

// unescape decodes %XX sequences; a '%' not followed by two hex digits is
// an error. '+' is a plus sign, not a space.
func unescape(s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		hi, ok1 := unhex(s[i+1])
		lo, ok2 := unhex(s[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
