module actor-vs-async/servers/go

go 1.19
