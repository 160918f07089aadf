%% users_erl.erl: the benchmark's contract (CONTRACT.md) in Erlang/OTP, no library beyond
%% kernel and stdlib: gen_tcp in the built-in HTTP packet mode ({packet, http_bin}), a process
%% per connection. GET /ping, GET /users/{id}, GET /users?limit&after, POST /users, the bearer
%% rule, and per /users request the work the built-in servers do (CONTRACT.md section 7): an
%% X-Request-Id, the JSON rendered from the stored fields, one access-log line (a logger
%% process writes them in batches). --share picks how the users are shared, nothing else
%% differs: ets (a public ETS table every connection reads and writes: shared state, the
%% runtime's own locks) or server (a gen_server that alone owns them: a single owner behind
%% messages). Started by `erl -noshell -pa DIR -run users_erl main -extra ARGS...` (servers/erl-*.toml,
%% +S schedulers = the server CPUs); prints "listening on http://HOST:PORT" on stderr; SIGTERM
%% stops the VM (init:stop), exit 0. No /metrics.
-module(users_erl).
-behaviour(gen_server).
-export([main/0, main/1, init/1, handle_call/3, handle_cast/2, handle_info/2]).

-define(LIST_MAX, 100).
-define(BODY_MAX, 4096).
-define(VERSION, "users_erl 1").

%% ---- the command line (after erl's -extra)

main() -> main(init:get_plain_arguments()).

main(Args) ->
    Opt = parse(Args, #{host => "127.0.0.1", port => -1, bearer => os:getenv("BEARER", ""),
                        seed => 10000, log => "/dev/null", share => "ets"}),
    case Opt of
        #{version := true} ->
            io:format("~s (Erlang/OTP ~s, erts ~s)~n",
                      [?VERSION, erlang:system_info(otp_release), erlang:system_info(version)]),
            halt(0);
        #{port := P, bearer := B, share := S} when P < 0; P > 65535; B =:= ""; S =/= "ets", S =/= "server" ->
            io:format(standard_error, "users_erl: --port 0..65535, a bearer (--bearer or $BEARER) "
                      "and --share ets|server are required~n", []),
            halt(2);
        _ -> start(Opt)
    end.

parse([], Opt) -> Opt;
parse(["--version" | T], Opt) -> parse(T, Opt#{version => true});
parse(["--host", V | T], Opt) -> parse(T, Opt#{host => V});
parse(["--port", V | T], Opt) -> parse(T, Opt#{port => list_to_integer(V)});
parse(["--bearer", V | T], Opt) -> parse(T, Opt#{bearer => V});
parse(["--seed-users", V | T], Opt) -> parse(T, Opt#{seed => list_to_integer(V)});
parse(["--access-log", V | T], Opt) -> parse(T, Opt#{log => V});
parse(["--share", V | T], Opt) -> parse(T, Opt#{share => V});
parse([A | _], _) ->
    io:format(standard_error, "users_erl: unknown option '~s'~n", [A]),
    halt(2).

start(#{host := Host, port := Port, bearer := Bearer, seed := Seed, log := LogPath, share := Share}) ->
    {ok, Ip} = inet:parse_address(Host),
    Store = store_start(list_to_atom(Share), Seed),
    Log = log_start(LogPath),
    {ok, L} = gen_tcp:listen(Port, [binary, {packet, http_bin}, {active, false}, {reuseaddr, true},
                                    {ip, Ip}, {backlog, 4096}, {nodelay, true}]),
    {ok, {_, Bound}} = inet:sockname(L),
    Ctx = #{store => Store, bearer => list_to_binary(Bearer), log => Log},
    io:format(standard_error, "users_erl: listening on http://~s:~b (share=~s, users=~b, OTP ~s, "
              "~b schedulers)~n", [Host, Bound, Share, Seed, erlang:system_info(otp_release),
                                   erlang:system_info(schedulers_online)]),
    accept(L, Ctx).

accept(L, Ctx) ->
    case gen_tcp:accept(L) of
        {ok, S} ->
            Pid = spawn(fun() -> receive go -> conn(S, Ctx) end end),
            ok = gen_tcp:controlling_process(S, Pid),
            Pid ! go;
        {error, _} -> ok
    end,
    accept(L, Ctx).

%% ---- a connection: requests in order (pipelined ones too), each answered before the next

conn(S, Ctx) ->
    case gen_tcp:recv(S, 0, 60000) of
        {ok, {http_request, Method, {abs_path, Target}, {1, 1}}} ->
            case headers(S, #{}) of
                {ok, H} -> request(S, Ctx, Method, Target, H);
                closed -> gen_tcp:close(S)
            end;
        {ok, {http_request, _, _, _}} -> answer(S, 505, <<"text/plain">>, <<"HTTP/1.1 only">>, [], close);
        {ok, {http_error, _}} -> answer(S, 400, <<"text/plain">>, <<"bad request">>, [], close);
        _ -> gen_tcp:close(S)
    end.

headers(S, H) ->
    case gen_tcp:recv(S, 0, 10000) of
        {ok, {http_header, _, Name, _, Value}} -> headers(S, H#{lower(Name) => Value});
        {ok, http_eoh} -> {ok, H};
        _ -> closed
    end.

lower(A) when is_atom(A) -> lower(atom_to_binary(A));
lower(B) -> string:lowercase(B).

body(S, H) ->
    case binary_to_integer(maps:get(<<"content-length">>, H, <<"0">>)) of
        0 -> {ok, <<>>};
        N when N > ?BODY_MAX -> too_big;
        N ->
            inet:setopts(S, [{packet, raw}]),
            R = gen_tcp:recv(S, N, 10000),
            inet:setopts(S, [{packet, http_bin}]),
            R
    end.

request(S, Ctx, Method, Target, H) ->
    {Path, Query} = case binary:split(Target, <<"?">>) of [P, Q] -> {P, Q}; [P] -> {P, <<>>} end,
    Body = case Method of 'POST' -> body(S, H); _ -> {ok, <<>>} end,
    Keep = case maps:get(<<"connection">>, H, <<>>) of <<"close">> -> close; _ -> keep end,
    Head = Method =:= 'HEAD',
    case Body of
        too_big -> reply(S, Head, 413, err_json(<<"body too large">>), [], close);
        {error, _} -> gen_tcp:close(S);
        {ok, B} ->
            case route(Ctx, Method, Path, Query, H, B) of
                {ping, Status, Type, Out} -> reply(S, Head, Status, {Type, Out}, [], Keep);
                {users, Status, Out, Extra} ->
                    T0 = erlang:monotonic_time(microsecond),
                    Rid = request_id(H),
                    reply(S, Head, Status, Out, [{<<"X-Request-Id">>, Rid} | Extra], Keep),
                    log_line(Ctx, Method, Target, Status, erlang:monotonic_time(microsecond) - T0, Rid)
            end
    end,
    case Keep of keep -> conn(S, Ctx); close -> gen_tcp:close(S) end.

request_id(H) ->
    case maps:get(<<"x-request-id">>, H, <<>>) of
        R when byte_size(R) >= 1, byte_size(R) =< 64 ->
            case re:run(R, <<"^[A-Za-z0-9._-]+$">>) of {match, _} -> R; _ -> fresh_id() end;
        _ -> fresh_id()
    end.

fresh_id() -> list_to_binary(io_lib:format("~16.16.0b", [rand:uniform(1 bsl 64) - 1])).

err_json(Msg) -> {<<"application/json">>, [<<"{\"error\":">>, json_string(Msg), <<"}">>]}.

route(_, M, <<"/ping">>, _, _, _) when M =:= 'GET'; M =:= 'HEAD' -> {ping, 200, <<"text/plain">>, <<"pong">>};
route(_, _, <<"/ping">>, _, _, _) -> {ping, 405, <<"application/json">>, <<"{\"error\":\"method not allowed\"}">>};
route(Ctx, M, <<"/users", Rest/binary>> = Path, Query, H, Body) when Rest =:= <<>>; binary_part(Rest, 0, 1) =:= <<"/">> ->
    case authorized(Ctx, H) of
        false -> {users, 401, err_json(<<"missing or invalid bearer token">>), [{<<"WWW-Authenticate">>, <<"Bearer">>}]};
        true -> users(Ctx, M, Path, Query, H, Body)
    end;
route(_, _, _, _, _, _) -> {ping, 404, <<"application/json">>, <<"{\"error\":\"not found\"}">>}.

authorized(#{bearer := B}, H) ->
    case maps:get(<<"authorization">>, H, <<>>) of
        <<Scheme:7/binary, Token/binary>> -> string:lowercase(Scheme) =:= <<"bearer ">> andalso Token =:= B;
        _ -> false
    end.

users(Ctx, 'POST', <<"/users">>, _, H, Body) ->
    Type = string:lowercase(string:trim(hd(binary:split(maps:get(<<"content-type">>, H, <<>>), <<";">>)))),
    case Type of
        <<"application/json">> -> create(Ctx, Body);
        _ -> {users, 415, err_json(<<"content type must be application/json">>), []}
    end;
users(Ctx, M, <<"/users">>, Query, _, _) when M =:= 'GET'; M =:= 'HEAD' ->
    Q = [list_to_tuple(binary:split(KV, <<"=">>)) || KV <- binary:split(Query, <<"&">>, [global]), KV =/= <<>>],
    Limit = number(proplists:get_value(<<"limit">>, Q, <<"10">>)),
    After = number(proplists:get_value(<<"after">>, Q, <<"0">>)),
    if
        Limit < 1; Limit > ?LIST_MAX -> {users, 400, err_json(<<"limit must be an integer 1..100">>), []};
        After < 0 -> {users, 400, err_json(<<"after must be a non-negative integer">>), []};
        true ->
            {Page, More} = store_call(Ctx, {list, After, Limit}),
            Next = case {More, Page} of {true, [_ | _]} -> integer_to_binary(element(1, lists:last(Page))); _ -> <<"null">> end,
            {users, 200, {<<"application/json">>, [<<"{\"users\":[">>, lists:join(<<",">>, [user_json(U) || U <- Page]),
                                                  <<"],\"next\":">>, Next, <<"}">>]}, []}
    end;
users(_, _, <<"/users">>, _, _, _) -> {users, 405, err_json(<<"method not allowed">>), [{<<"Allow">>, <<"GET, HEAD, POST">>}]};
users(Ctx, M, <<"/users/", Id/binary>>, _, _, _) when M =:= 'GET'; M =:= 'HEAD' ->
    case number(Id) of
        N when N >= 1 ->
            case store_call(Ctx, {get, N}) of
                {ok, U} -> {users, 200, {<<"application/json">>, user_json(U)}, []};
                none -> {users, 404, err_json(<<"user not found">>), []}
            end;
        _ -> {users, 400, err_json(<<"id must be a positive integer">>), []}
    end;
users(_, _, _, _, _, _) -> {users, 405, err_json(<<"method not allowed">>), [{<<"Allow">>, <<"GET, HEAD">>}]}.

%% number: a whole number 0..2^64-1 from 1..20 decimal digits, else -1
number(B) when byte_size(B) >= 1, byte_size(B) =< 20 ->
    case re:run(B, <<"^[0-9]+$">>) of
        {match, _} -> case binary_to_integer(B) of N when N < 1 bsl 64 -> N; _ -> -1 end;
        _ -> -1
    end;
number(_) -> -1.

create(Ctx, Body) ->
    case json_object(Body) of
        {ok, Fields} ->
            Name = proplists:get_value(<<"name">>, Fields),
            Email = proplists:get_value(<<"email">>, Fields),
            if
                not is_binary(Name); byte_size(Name) < 1; byte_size(Name) > 64 ->
                    {users, 400, err_json(<<"name must be a string of 1..64 bytes">>), []};
                not is_binary(Email); byte_size(Email) < 3; byte_size(Email) > 128 ->
                    {users, 400, err_json(<<"email must be a string of 3..128 bytes containing @">>), []};
                true ->
                    case binary:match(Email, <<"@">>) of
                        nomatch -> {users, 400, err_json(<<"email must be a string of 3..128 bytes containing @">>), []};
                        _ ->
                            {Id, _, _} = U = store_call(Ctx, {create, Name, Email}),
                            {users, 201, {<<"application/json">>, user_json(U)},
                             [{<<"Location">>, <<"/users/", (integer_to_binary(Id))/binary>>}]}
                    end
            end;
        error -> {users, 400, err_json(<<"body must be a JSON object">>), []}
    end.

%% ---- responses: Content-Length framed, with Date

reply(S, Head, Status, {Type, Body}, Extra, Keep) ->
    answer(S, Status, Type, case Head of true -> {head, Body}; false -> Body end, Extra, Keep).

answer(S, Status, Type, Body0, Extra, Keep) ->
    {Len, Body} = case Body0 of {head, B} -> {iolist_size(B), <<>>}; B -> {iolist_size(B), B} end,
    Hdrs = [[K, <<": ">>, V, <<"\r\n">>] || {K, V} <- Extra],
    Conn = case Keep of close -> <<"Connection: close\r\n">>; _ -> <<>> end,
    gen_tcp:send(S, [<<"HTTP/1.1 ">>, integer_to_binary(Status), <<" ">>, reason(Status), <<"\r\nDate: ">>, http_date(),
                     <<"\r\nContent-Type: ">>, Type, <<"\r\nContent-Length: ">>, integer_to_binary(Len), <<"\r\n">>,
                     Hdrs, Conn, <<"\r\n">>, Body]).

reason(200) -> <<"OK">>; reason(201) -> <<"Created">>; reason(400) -> <<"Bad Request">>;
reason(401) -> <<"Unauthorized">>; reason(404) -> <<"Not Found">>; reason(405) -> <<"Method Not Allowed">>;
reason(413) -> <<"Content Too Large">>; reason(415) -> <<"Unsupported Media Type">>; reason(_) -> <<"Other">>.

http_date() ->
    {{Y, Mo, D}, {H, Mi, S}} = calendar:universal_time(),
    Day = element(calendar:day_of_the_week(Y, Mo, D), {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}),
    Mon = element(Mo, {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}),
    io_lib:format("~s, ~2..0b ~s ~b ~2..0b:~2..0b:~2..0b GMT", [Day, D, Mon, Y, H, Mi, S]).

%% ---- JSON: users rendered per request; a POST body parsed as an object of scalars

user_json({Id, Name, Email}) ->
    [<<"{\"id\":">>, integer_to_binary(Id), <<",\"name\":">>, json_string(Name), <<",\"email\":">>,
     json_string(Email), <<"}">>].

json_string(B) -> [$", [esc(C) || <<C>> <= B], $"].
esc($") -> <<"\\\"">>; esc($\\) -> <<"\\\\">>;
esc(C) when C < 16#20 -> io_lib:format("\\u~4.16.0b", [C]);
esc(C) -> C.

json_object(B) ->
    try
        <<"{", R0/binary>> = ws(B),
        {Fields, R1} = members(ws(R0), []),
        <<>> = ws(R1),
        {ok, Fields}
    catch _:_ -> error
    end.

members(<<"}", R/binary>>, []) -> {[], R};
members(R0, Acc) ->
    {K, R1} = str(R0),
    <<":", R2/binary>> = ws(R1),
    {V, R3} = value(ws(R2)),
    case ws(R3) of
        <<",", R4/binary>> -> members(ws(R4), [{K, V} | Acc]);
        <<"}", R4/binary>> -> {lists:reverse([{K, V} | Acc]), R4}
    end.

value(<<"\"", _/binary>> = R) -> str(R);
value(<<"true", R/binary>>) -> {true, R};
value(<<"false", R/binary>>) -> {false, R};
value(<<"null", R/binary>>) -> {null, R};
value(R) ->
    {match, [N]} = re:run(R, <<"^-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?">>, [{capture, first, binary}]),
    {{number, N}, binary_part(R, byte_size(N), byte_size(R) - byte_size(N))}.

str(<<"\"", R/binary>>) -> str(R, <<>>).
str(<<"\"", R/binary>>, Acc) -> {Acc, R};
str(<<"\\u", H:4/binary, R/binary>>, Acc) -> str(R, <<Acc/binary, (unicode:characters_to_binary([binary_to_integer(H, 16)]))/binary>>);
str(<<"\\", C, R/binary>>, Acc) ->
    str(R, <<Acc/binary, (case C of $n -> $\n; $t -> $\t; $r -> $\r; $b -> $\b; $f -> $\f; _ -> C end)>>);
str(<<C, R/binary>>, Acc) -> str(R, <<Acc/binary, C>>).

ws(<<C, R/binary>>) when C =:= $\s; C =:= $\t; C =:= $\n; C =:= $\r -> ws(R);
ws(R) -> R.

%% ---- the access log: "MS METHOD TARGET STATUS DURus REQUEST_ID" per /users request, sent to
%% one logger process that writes at 64 KiB or every 100 ms (the same for both shares)

log_start(Path) ->
    Self = self(),
    Pid = spawn(fun() ->
                    case file:open(Path, [append, raw, binary]) of
                        {ok, F} -> Self ! {log, ok}, log_loop(F, [], 0);
                        {error, Why} -> Self ! {log, Why}
                    end
                end),
    receive
        {log, ok} -> ok;
        {log, Why} -> io:format(standard_error, "users_erl: cannot open access log: ~p~n", [Why]), halt(1)
    end,
    {ok, _} = timer:send_interval(100, Pid, flush),
    Pid.

log_line(#{log := Pid}, Method, Target, Status, Us, Rid) ->
    T = binary:part(Target, 0, min(256, byte_size(Target))),
    Pid ! {line, [integer_to_binary(erlang:system_time(millisecond)), $\s, atom_to_binary(Method), $\s, T, $\s,
                  integer_to_binary(Status), $\s, integer_to_binary(Us), <<"us ">>, Rid, $\n]}.

log_loop(F, Buf, N) ->
    receive
        {line, L} when N + 200 >= 65536 -> file:write(F, lists:reverse([L | Buf])), log_loop(F, [], 0);
        {line, L} -> log_loop(F, [L | Buf], N + iolist_size(L));
        flush -> file:write(F, lists:reverse(Buf)), log_loop(F, [], 0)
    end.

%% ---- the two ways of sharing the users (nothing else differs)

store_start(ets, Seed) ->
    T = ets:new(users, [set, public, {read_concurrency, true}, {write_concurrency, true}]),
    ets:insert(T, [{I, user_name(I), user_email(I)} || I <- lists:seq(1, Seed)]),
    C = atomics:new(1, [{signed, false}]),
    atomics:put(C, 1, Seed),
    {ets, T, C};
store_start(server, Seed) ->
    {ok, Pid} = gen_server:start(?MODULE, Seed, []),
    {server, Pid}.

store_call(#{store := {ets, T, _}}, {get, Id}) ->
    case ets:lookup(T, Id) of [U] -> {ok, U}; [] -> none end;
store_call(#{store := {ets, T, C}}, {list, After, Limit}) ->
    Count = atomics:get(C, 1),
    {lists:append([ets:lookup(T, I) || I <- lists:seq(After + 1, min(After + Limit, Count))]), After + Limit < Count};
store_call(#{store := {ets, T, C}}, {create, Name, Email}) ->
    U = {atomics:add_get(C, 1, 1), Name, Email},   % the id, taken atomically
    ets:insert(T, U),
    U;
store_call(#{store := {server, Pid}}, Req) ->
    gen_server:call(Pid, Req, infinity).

user_name(I) -> <<"user-", (integer_to_binary(I))/binary>>.
user_email(I) -> <<"user-", (integer_to_binary(I))/binary, "@example.com">>.

%% the gen_server: its state is the users (a map id -> user) and their count; it alone
%% reads and writes them, one message at a time
init(Seed) -> {ok, {maps:from_list([{I, {I, user_name(I), user_email(I)}} || I <- lists:seq(1, Seed)]), Seed}}.

handle_call({get, Id}, _, {M, _} = St) ->
    {reply, case M of #{Id := U} -> {ok, U}; _ -> none end, St};
handle_call({list, After, Limit}, _, {M, N} = St) ->
    {reply, {[maps:get(I, M) || I <- lists:seq(After + 1, min(After + Limit, N))], After + Limit < N}, St};
handle_call({create, Name, Email}, _, {M, N}) ->
    U = {N + 1, Name, Email},
    {reply, U, {M#{N + 1 => U}, N + 1}}.

handle_cast(_, St) -> {noreply, St}.
handle_info(_, St) -> {noreply, St}.
