/* main: placeholder so `make` links build/actor-server while the server is being
 * written; the real main.c (CLI, I/O loops, actors) replaces this file. */
#include <stdio.h>

int main(void)
{
    fputs("actor-server: not built yet\n", stderr);
    return 1;
}
