taskset -c 0 /work/main/build/async-server --store=memory --host 127.0.0.1 --port 47981 --threads 1 --bearer test-token-aaaaaaaaaaaaaaaaaaaa --seed-users 10000 --access-log /dev/null 
