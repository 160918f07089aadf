//! users-rs: the benchmark's contract (CONTRACT.md) in Rust, hyper 0.14 on tokio's
//! multi-threaded runtime (--threads workers: the server CPUs): GET /ping, GET /users/{id},
//! GET /users?limit&after, POST /users, the bearer rule, and per /users request the work the
//! built-in servers do (CONTRACT.md section 7): an X-Request-Id, the JSON rendered from the
//! stored fields, one access-log line (buffered, written every 100 ms by a thread). --share
//! picks how the users are shared, nothing else differs: mutex (an Arc<Mutex<Vec<User>>>,
//! shared state behind a lock) or actor (a task that alone owns them, reached over an mpsc
//! channel with a oneshot reply: a single owner behind messages). Prints "listening on
//! http://HOST:PORT" on stderr; SIGTERM or SIGINT: graceful shutdown, exit 0. No /metrics.
use hyper::service::{make_service_fn, service_fn};
use hyper::{Body, Method, Request, Response, Server};
use std::convert::Infallible;
use std::fs::OpenOptions;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, oneshot};

const LIST_MAX: u64 = 100;
const BODY_MAX: usize = 4096;
const VERSION: &str = "users-rs 1";

#[derive(Clone)]
struct User {
    id: u64,
    name: String,
    email: String,
}

enum Op {
    Get(u64),
    List(u64, u64),
    Create(String, String),
}

enum Reply {
    User(Option<User>),
    Page(Vec<User>, bool),
}

/// The one operation of the store, over the users it is given (both shares run it).
fn apply(users: &mut Vec<User>, op: Op) -> Reply {
    match op {
        Op::Get(id) => Reply::User(if id >= 1 && id <= users.len() as u64 { Some(users[(id - 1) as usize].clone()) } else { None }),
        Op::List(after, limit) => {
            let n = users.len() as u64;
            let (a, e) = (after.min(n), after.saturating_add(limit).min(n));
            Reply::Page(users[a as usize..e as usize].to_vec(), after.saturating_add(limit) < n)
        }
        Op::Create(name, email) => {
            let u = User { id: users.len() as u64 + 1, name, email };
            users.push(u.clone());
            Reply::User(Some(u))
        }
    }
}

/// How the users are shared: the only difference between rust-mutex and rust-actor.
#[derive(Clone)]
enum Store {
    Mutex(Arc<Mutex<Vec<User>>>),
    Actor(mpsc::Sender<(Op, oneshot::Sender<Reply>)>),
}

impl Store {
    fn new(share: &str, seed: u64) -> Store {
        let users: Vec<User> = (1..=seed)
            .map(|i| User { id: i, name: format!("user-{}", i), email: format!("user-{}@example.com", i) })
            .collect();
        if share == "mutex" {
            return Store::Mutex(Arc::new(Mutex::new(users)));
        }
        let (tx, mut rx) = mpsc::channel::<(Op, oneshot::Sender<Reply>)>(1024);
        tokio::spawn(async move {
            let mut users = users; // the owner: the only task that touches them
            while let Some((op, reply)) = rx.recv().await {
                let _ = reply.send(apply(&mut users, op));
            }
        });
        Store::Actor(tx)
    }

    async fn call(&self, op: Op) -> Reply {
        match self {
            Store::Mutex(m) => apply(&mut m.lock().unwrap(), op),
            Store::Actor(tx) => {
                let (rtx, rrx) = oneshot::channel();
                tx.send((op, rtx)).await.ok().expect("the store task ended");
                rrx.await.expect("the store task ended")
            }
        }
    }
}

struct Ctx {
    store: Store,
    bearer: String,
    log: Arc<Mutex<Vec<u8>>>,
}

fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn user_json(u: &User, out: &mut String) {
    out.push_str(&format!("{{\"id\":{},\"name\":", u.id));
    json_string(&u.name, out);
    out.push_str(",\"email\":");
    json_string(&u.email, out);
    out.push('}');
}

/// A POST body: a JSON object; the string members it has (others are kept out). None: not
/// an object of scalars.
fn parse_object(b: &[u8]) -> Option<Vec<(String, Option<String>)>> {
    let s = std::str::from_utf8(b).ok()?.trim();
    let mut it = s.strip_prefix('{')?.strip_suffix('}')?.trim().chars().peekable();
    let mut out = Vec::new();
    fn ws(it: &mut std::iter::Peekable<std::str::Chars>) {
        while matches!(it.peek(), Some(c) if c.is_whitespace()) {
            it.next();
        }
    }
    fn string(it: &mut std::iter::Peekable<std::str::Chars>) -> Option<String> {
        if it.next()? != '"' {
            return None;
        }
        let mut s = String::new();
        loop {
            match it.next()? {
                '"' => return Some(s),
                '\\' => match it.next()? {
                    'n' => s.push('\n'),
                    't' => s.push('\t'),
                    'r' => s.push('\r'),
                    'b' => s.push('\u{8}'),
                    'f' => s.push('\u{c}'),
                    'u' => {
                        let h: String = (0..4).filter_map(|_| it.next()).collect();
                        s.push(char::from_u32(u32::from_str_radix(&h, 16).ok()?)?);
                    }
                    c => s.push(c),
                },
                c => s.push(c),
            }
        }
    }
    ws(&mut it);
    if it.peek().is_none() {
        return Some(out);
    }
    loop {
        ws(&mut it);
        let k = string(&mut it)?;
        ws(&mut it);
        if it.next()? != ':' {
            return None;
        }
        ws(&mut it);
        let v = if it.peek() == Some(&'"') {
            Some(string(&mut it)?)
        } else {
            let lit: String = std::iter::from_fn(|| it.next_if(|c| *c != ',' && !c.is_whitespace())).collect();
            if lit.is_empty() || lit.starts_with('{') || lit.starts_with('[') {
                return None;
            }
            None
        };
        out.push((k, v));
        ws(&mut it);
        match it.next() {
            None => return Some(out),
            Some(',') => continue,
            _ => return None,
        }
    }
}

/// A whole number 0..2^64-1 from 1..20 decimal digits.
fn number(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn respond(status: u16, ctype: &str, body: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("Content-Type", ctype)
        .header("Content-Length", body.len())
        .body(Body::from(body))
        .unwrap()
}

fn error(status: u16, msg: &str) -> Response<Body> {
    let mut s = String::from("{\"error\":");
    json_string(msg, &mut s);
    s.push('}');
    respond(status, "application/json", s)
}

async fn users(ctx: &Ctx, req: Request<Body>) -> Response<Body> {
    let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or("");
    let ok = auth.len() == 7 + ctx.bearer.len() && auth[..7].eq_ignore_ascii_case("bearer ") && auth[7..] == ctx.bearer;
    if !ok {
        let mut r = error(401, if auth.is_empty() { "missing bearer token" } else { "invalid bearer token" });
        r.headers_mut().insert("WWW-Authenticate", "Bearer".parse().unwrap());
        return r;
    }
    let path = req.uri().path().to_string();
    let read = req.method() == Method::GET || req.method() == Method::HEAD;
    if path == "/users" {
        if req.method() == Method::POST {
            return create(ctx, req).await;
        }
        if !read {
            return error(405, "method not allowed");
        }
        let (mut limit, mut after) = (10u64, 0u64);
        for kv in req.uri().query().unwrap_or("").split('&').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            if k == "limit" {
                match number(v) {
                    Some(n) if (1..=LIST_MAX).contains(&n) => limit = n,
                    _ => return error(400, "limit must be an integer 1..100"),
                }
            } else if k == "after" {
                match number(v) {
                    Some(n) => after = n,
                    None => return error(400, "after must be a non-negative integer"),
                }
            }
        }
        if let Reply::Page(page, more) = ctx.store.call(Op::List(after, limit)).await {
            let mut s = String::from("{\"users\":[");
            for (i, u) in page.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                user_json(u, &mut s);
            }
            s.push_str("],\"next\":");
            match page.last() {
                Some(u) if more => s.push_str(&u.id.to_string()),
                _ => s.push_str("null"),
            }
            s.push('}');
            return respond(200, "application/json", s);
        }
        return error(500, "store");
    }
    if !read {
        return error(405, "method not allowed");
    }
    match number(&path["/users/".len()..]) {
        Some(id) if id >= 1 => match ctx.store.call(Op::Get(id)).await {
            Reply::User(Some(u)) => {
                let mut s = String::new();
                user_json(&u, &mut s);
                respond(200, "application/json", s)
            }
            _ => error(404, "user not found"),
        },
        _ => error(400, "id must be a positive integer"),
    }
}

async fn create(ctx: &Ctx, req: Request<Body>) -> Response<Body> {
    let ctype = req.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    let json = ctype.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case("application/json");
    let body = match hyper::body::to_bytes(req.into_body()).await {
        Ok(b) => b,
        Err(_) => return error(400, "body could not be read"),
    };
    if !json {
        return error(415, "content type must be application/json");
    }
    if body.len() > BODY_MAX {
        return error(413, "body too large");
    }
    let fields = match parse_object(&body) {
        Some(f) => f,
        None => return error(400, "body must be a JSON object"),
    };
    let get = |k: &str| fields.iter().find(|(n, _)| n == k).and_then(|(_, v)| v.clone());
    let name = match get("name") {
        Some(n) if !n.is_empty() && n.len() <= 64 => n,
        _ => return error(400, "name must be a string of 1..64 bytes"),
    };
    let email = match get("email") {
        Some(e) if e.len() >= 3 && e.len() <= 128 && e.contains('@') => e,
        _ => return error(400, "email must be a string of 3..128 bytes containing @"),
    };
    match ctx.store.call(Op::Create(name, email)).await {
        Reply::User(Some(u)) => {
            let mut s = String::new();
            user_json(&u, &mut s);
            let mut r = respond(201, "application/json", s);
            r.headers_mut().insert("Location", format!("/users/{}", u.id).parse().unwrap());
            r
        }
        _ => error(500, "store"),
    }
}

async fn handle(ctx: Arc<Ctx>, req: Request<Body>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path();
    if path == "/ping" {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return Ok(error(405, "method not allowed"));
        }
        return Ok(respond(200, "text/plain", "pong".to_string()));
    }
    if path != "/users" && !path.starts_with("/users/") {
        return Ok(error(404, "not found"));
    }
    // the middleware of every /users request: a request id on the answer, a log line after it
    let t0 = Instant::now();
    let given = req.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("");
    let rid = if !given.is_empty() && given.len() <= 64 && given.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)) {
        given.to_string()
    } else {
        let n = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
        format!("{:016x}", n.wrapping_mul(0x9e3779b97f4a7c15) ^ (t0.elapsed().as_nanos() as u64))
    };
    let (method, target) = (req.method().to_string(), req.uri().to_string());
    let mut resp = users(&ctx, req).await;
    resp.headers_mut().insert("X-Request-Id", rid.parse().unwrap());
    let ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis();
    let line = format!("{} {} {} {} {}us {}\n", ms, method, &target[..target.len().min(256)], resp.status().as_u16(),
                       t0.elapsed().as_micros(), rid);
    ctx.log.lock().unwrap().extend_from_slice(line.as_bytes());
    Ok(resp)
}

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--version") {
        println!("{} (hyper 0.14, tokio 1)", VERSION);
        return;
    }
    let share = arg(&args, "--share", "mutex");
    let bearer = arg(&args, "--bearer", &std::env::var("BEARER").unwrap_or_default());
    let threads: usize = arg(&args, "--threads", "1").parse().unwrap_or(1).max(1);
    let seed: u64 = arg(&args, "--seed-users", "10000").parse().unwrap_or(10000);
    let addr: SocketAddr = format!("{}:{}", arg(&args, "--host", "127.0.0.1"), arg(&args, "--port", "")).parse().unwrap_or_else(|_| {
        eprintln!("users-rs: --port 0..65535 is required");
        std::process::exit(2)
    });
    if bearer.is_empty() || (share != "mutex" && share != "actor") {
        eprintln!("users-rs: a bearer (--bearer or $BEARER) and --share mutex|actor are required");
        std::process::exit(2);
    }
    let mut file = OpenOptions::new().append(true).create(true).open(arg(&args, "--access-log", "/dev/null")).unwrap_or_else(|e| {
        eprintln!("users-rs: cannot open the access log: {}", e);
        std::process::exit(1)
    });
    let log = Arc::new(Mutex::new(Vec::with_capacity(65536)));
    let flusher = log.clone();
    std::thread::spawn(move || loop {
        std::thread::sleep(Duration::from_millis(100));
        let buf = std::mem::take(&mut *flusher.lock().unwrap());
        let _ = file.write_all(&buf);
    });
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build().unwrap();
    rt.block_on(async move {
        let ctx = Arc::new(Ctx { store: Store::new(&share, seed), bearer, log });
        let make = make_service_fn(move |_| {
            let ctx = ctx.clone();
            async move { Ok::<_, Infallible>(service_fn(move |req| handle(ctx.clone(), req))) }
        });
        let server = Server::try_bind(&addr).unwrap_or_else(|e| {
            eprintln!("users-rs: cannot listen on {}: {}", addr, e);
            std::process::exit(1)
        });
        let server = server.tcp_nodelay(true).serve(make);
        eprintln!("users-rs: listening on http://{} (share={}, users={}, {} worker thread(s))", server.local_addr(), share, seed, threads);
        let stop = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
            tokio::select! { _ = term.recv() => {}, _ = tokio::signal::ctrl_c() => {} }
            eprintln!("users-rs: stopping");
        };
        if let Err(e) = server.with_graceful_shutdown(stop).await {
            eprintln!("users-rs: {}", e);
        }
    });
}
