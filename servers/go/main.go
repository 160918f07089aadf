// main.go: the benchmark's contract (CONTRACT.md) in Go's net/http, the standard library
// only: GET /ping, GET /users/{id}, GET /users?limit&after, POST /users, the bearer rule,
// and per /users request the work the built-in servers do (CONTRACT.md section 7): an
// X-Request-Id, the JSON rendered from the stored fields, one access-log line. -share picks
// how the users are shared (store.go): mutex (a map behind a sync.Mutex) or actor (a store
// goroutine that alone owns them, over channels); nothing else differs. GOMAXPROCS is the
// number of server CPUs (the definition sets it). Prints "listening on http://HOST:PORT" on
// stderr when ready; on SIGTERM or SIGINT stops accepting, lets busy connections finish
// (2 s at most), flushes the log and exits 0. No /metrics.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	listMax = 100
	bodyMax = 4096
	version = "go-users 1"
)

var ridOK = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// itoa: a decimal uint64.
func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// ---- the access log: "MS METHOD TARGET STATUS DURus REQUEST_ID" per /users request,
// buffered and written at 64 KiB or every 100 ms (as the built-in servers' logger)

type accessLog struct {
	mu sync.Mutex
	w  *bufio.Writer
	f  *os.File
}

func openLog(path string) (*accessLog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	l := &accessLog{w: bufio.NewWriterSize(f, 65536), f: f}
	go func() {
		for range time.Tick(100 * time.Millisecond) {
			l.flush()
		}
	}()
	return l, nil
}

func (l *accessLog) line(r *http.Request, status int, t0 time.Time, rid string) {
	target := r.RequestURI
	if len(target) > 256 {
		target = target[:256]
	}
	s := fmt.Sprintf("%d %s %s %d %dus %s\n", time.Now().UnixMilli(), r.Method, target, status,
		time.Since(t0).Microseconds(), rid)
	l.mu.Lock()
	l.w.WriteString(s)
	l.mu.Unlock()
}

func (l *accessLog) flush() {
	l.mu.Lock()
	l.w.Flush()
	l.mu.Unlock()
}

// ---- responses: always Content-Length framed

func send(w http.ResponseWriter, status int, ctype string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body) // a HEAD request gets the headers only (net/http drops the body)
}

func sendJSON(w http.ResponseWriter, status int, v any) {
	body, _ := json.Marshal(v)
	send(w, status, "application/json", body)
}

func sendError(w http.ResponseWriter, status int, msg string) {
	sendJSON(w, status, map[string]string{"error": msg})
}

// statusWriter remembers the status, for the log line.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

type server struct {
	store  Store
	bearer string
	log    *accessLog
}

// authorized: "Authorization: Bearer TOKEN", the scheme in any case, the token exactly.
func (s *server) authorized(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	return len(h) == 7+len(s.bearer) && strings.EqualFold(h[:7], "bearer ") && h[7:] == s.bearer
}

// parseID: a whole number 0..2^64-1 from 1..20 decimal digits, or false.
func parseID(text string) (uint64, bool) {
	if len(text) < 1 || len(text) > 20 || strings.TrimLeft(text, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseUint(text, 10, 64)
	return n, err == nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	read := r.Method == http.MethodGet || r.Method == http.MethodHead
	if path == "/ping" {
		if !read {
			w.Header().Set("Allow", "GET, HEAD")
			sendError(w, 405, "method not allowed")
			return
		}
		send(w, 200, "text/plain", []byte("pong"))
		return
	}
	if path != "/users" && !strings.HasPrefix(path, "/users/") {
		sendError(w, 404, "not found")
		return
	}
	// the middleware of every /users request: a request id on the answer, a log line after it
	t0 := time.Now()
	rid := r.Header.Get("X-Request-Id")
	if !ridOK.MatchString(rid) {
		rid = fmt.Sprintf("%016x", rand.Uint64())
	}
	w.Header().Set("X-Request-Id", rid)
	sw := &statusWriter{ResponseWriter: w, status: 200}
	s.users(sw, r, path, read)
	s.log.line(r, sw.status, t0, rid)
}

func (s *server) users(w http.ResponseWriter, r *http.Request, path string, read bool) {
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", "Bearer")
		msg := "missing bearer token"
		if r.Header.Get("Authorization") != "" {
			msg = "invalid bearer token"
		}
		sendError(w, 401, msg)
		return
	}
	if path == "/users" {
		if r.Method == http.MethodPost {
			s.create(w, r)
			return
		}
		if !read {
			w.Header().Set("Allow", "GET, HEAD, POST")
			sendError(w, 405, "method not allowed")
			return
		}
		s.list(w, r)
		return
	}
	if !read {
		w.Header().Set("Allow", "GET, HEAD")
		sendError(w, 405, "method not allowed")
		return
	}
	id, ok := parseID(path[len("/users/"):])
	if !ok || id < 1 {
		sendError(w, 400, "id must be a positive integer")
		return
	}
	u, found := s.store.Get(id)
	if !found {
		sendError(w, 404, "user not found")
		return
	}
	sendJSON(w, 200, u)
}

func (s *server) list(w http.ResponseWriter, r *http.Request) {
	limit, after := uint64(10), uint64(0)
	q := r.URL.Query()
	if v, ok := q["limit"]; ok {
		n, good := parseID(v[0])
		if !good || n < 1 || n > listMax {
			sendError(w, 400, "limit must be an integer 1..100")
			return
		}
		limit = n
	}
	if v, ok := q["after"]; ok {
		n, good := parseID(v[0])
		if !good {
			sendError(w, 400, "after must be a non-negative integer")
			return
		}
		after = n
	}
	page, more := s.store.List(after, int(limit))
	var next *uint64
	if more && len(page) > 0 {
		next = &page[len(page)-1].ID
	}
	sendJSON(w, 200, struct {
		Users []User  `json:"users"`
		Next  *uint64 `json:"next"`
	}{page, next})
}

func (s *server) create(w http.ResponseWriter, r *http.Request) {
	ctype := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
	if ctype != "application/json" {
		io.Copy(io.Discard, r.Body)
		sendError(w, 415, "content type must be application/json")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, bodyMax+1))
	if err != nil {
		sendError(w, 400, "body could not be read")
		return
	}
	if len(body) > bodyMax {
		sendError(w, 413, "body too large")
		return
	}
	var doc struct {
		Name  *string `json:"name"`
		Email *string `json:"email"`
	}
	if json.Unmarshal(body, &doc) != nil {
		sendError(w, 400, "body must be a JSON object")
		return
	}
	if doc.Name == nil || len(*doc.Name) < 1 || len(*doc.Name) > 64 {
		sendError(w, 400, "name must be a string of 1..64 bytes")
		return
	}
	if doc.Email == nil || len(*doc.Email) < 3 || len(*doc.Email) > 128 || !strings.Contains(*doc.Email, "@") {
		sendError(w, 400, "email must be a string of 3..128 bytes containing @")
		return
	}
	u := s.store.Create(*doc.Name, *doc.Email)
	w.Header().Set("Location", "/users/"+itoa(u.ID))
	sendJSON(w, 201, u)
}

func main() {
	host := flag.String("host", "127.0.0.1", "address to listen on")
	port := flag.Int("port", -1, "TCP port (0: any free one)")
	bearer := flag.String("bearer", os.Getenv("BEARER"), "the token /users requests must carry")
	seed := flag.Int("seed-users", 10000, "users 1..N created at start")
	logPath := flag.String("access-log", "/dev/null", "one line per /users request, appended")
	share := flag.String("share", "mutex", "how the users are shared: mutex or actor")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Printf("%s (%s)\n", version, runtime.Version())
		return
	}
	if *port < 0 || *port > 65535 || *bearer == "" || *seed < 0 || (*share != "mutex" && *share != "actor") {
		fmt.Fprintln(os.Stderr, "go-users: --port 0..65535, a bearer (--bearer or $BEARER) and --share mutex|actor are required")
		flag.Usage()
		os.Exit(2)
	}
	var store Store = newMutexStore(*seed)
	if *share == "actor" {
		store = newActorStore(*seed)
	}
	alog, err := openLog(*logPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-users: cannot open access log: %v\n", err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-users: cannot listen: %v\n", err)
		os.Exit(1)
	}
	srv := &http.Server{Handler: &server{store: store, bearer: *bearer, log: alog},
		IdleTimeout: 60 * time.Second, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "go-users: listening on http://%s (share=%s, users=%d, %s, GOMAXPROCS %d)\n",
		ln.Addr(), *share, *seed, runtime.Version(), runtime.GOMAXPROCS(0))
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sig := <-stop
		fmt.Fprintf(os.Stderr, "go-users: %v received, stopping\n", sig)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}()
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		fmt.Fprintf(os.Stderr, "go-users: %v\n", err)
		os.Exit(1)
	}
	<-done // Shutdown has let the busy connections finish
	alog.flush()
}
