// store.go: the users, and the two ways of sharing them that the pair of definitions
// compares (servers/go-mutex.toml, servers/go-actor.toml): a map behind one sync.Mutex
// (shared state behind a lock), or a goroutine that alone owns the map and answers requests
// sent over a channel (a single owner behind messages). Everything else in this server is
// the same for both.
package main

import "sync"

// User is one stored user; responses are rendered from these fields per request.
type User struct {
	ID    uint64 `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
}

// Store is what the handlers need; both implementations keep ids dense (user N is the N-th).
type Store interface {
	// Get returns user ID and true, or false when there is none.
	Get(id uint64) (User, bool)
	// List returns up to limit users with ids above after, ascending, and whether more follow.
	List(after uint64, limit int) ([]User, bool)
	// Create stores a new user with the next id and returns it.
	Create(name, email string) User
}

func seedUsers(n int) []User {
	users := make([]User, 0, n)
	for i := 1; i <= n; i++ {
		users = append(users, User{uint64(i), "user-" + itoa(uint64(i)), "user-" + itoa(uint64(i)) + "@example.com"})
	}
	return users
}

func listOf(users []User, after uint64, limit int) ([]User, bool) {
	if after >= uint64(len(users)) {
		return []User{}, false
	}
	end := after + uint64(limit)
	more := end < uint64(len(users))
	if !more {
		end = uint64(len(users))
	}
	return append([]User(nil), users[after:end]...), more
}

// ---- shared state behind a lock

type mutexStore struct {
	mu    sync.Mutex
	users []User
}

func newMutexStore(seed int) *mutexStore { return &mutexStore{users: seedUsers(seed)} }

func (s *mutexStore) Get(id uint64) (User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < 1 || id > uint64(len(s.users)) {
		return User{}, false
	}
	return s.users[id-1], true
}

func (s *mutexStore) List(after uint64, limit int) ([]User, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return listOf(s.users, after, limit)
}

func (s *mutexStore) Create(name, email string) User {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := User{uint64(len(s.users)) + 1, name, email}
	s.users = append(s.users, u)
	return u
}

// ---- a single owner behind messages

type storeReq struct {
	op          int // opGet, opList, opCreate
	id, after   uint64
	limit       int
	name, email string
	reply       chan storeResp
}

type storeResp struct {
	user  User
	ok    bool
	users []User
}

const (
	opGet = iota
	opList
	opCreate
)

type actorStore struct{ mailbox chan storeReq }

var replyPool = sync.Pool{New: func() any { return make(chan storeResp, 1) }}

func newActorStore(seed int) *actorStore {
	s := &actorStore{mailbox: make(chan storeReq, 1024)}
	go func(users []User) { // the owner: the only goroutine that touches users
		for r := range s.mailbox {
			var out storeResp
			switch r.op {
			case opGet:
				if r.id >= 1 && r.id <= uint64(len(users)) {
					out.user, out.ok = users[r.id-1], true
				}
			case opList:
				out.users, out.ok = listOf(users, r.after, r.limit)
			case opCreate:
				out.user = User{uint64(len(users)) + 1, r.name, r.email}
				users = append(users, out.user)
				out.ok = true
			}
			r.reply <- out
		}
	}(seedUsers(seed))
	return s
}

func (s *actorStore) call(r storeReq) storeResp {
	r.reply = replyPool.Get().(chan storeResp)
	s.mailbox <- r
	out := <-r.reply
	replyPool.Put(r.reply)
	return out
}

func (s *actorStore) Get(id uint64) (User, bool) {
	r := s.call(storeReq{op: opGet, id: id})
	return r.user, r.ok
}

func (s *actorStore) List(after uint64, limit int) ([]User, bool) {
	r := s.call(storeReq{op: opList, after: after, limit: limit})
	return r.users, r.ok
}

func (s *actorStore) Create(name, email string) User {
	return s.call(storeReq{op: opCreate, name: name, email: email}).user
}
