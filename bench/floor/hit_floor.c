// hit_floor: the least work a server can do to answer bench/cache.sh's b2 and b3 HITs from
// a cache directory that nginx (or Portico) filled, used by bench/cache_floor.sh to show how
// low CPU per request can go on those loads. It is not a server: no configuration, no
// logging, no header processing, no error handling beyond closing the connection.
//
//   hit_floor one PORT ENTRY_FILE   every request: the entry's stored head (MSG_MORE), then
//                                   its body by sendfile from a descriptor kept open (b3)
//   hit_floor keys PORT CACHE_DIR   GET /keys/...: md5("http://backend" + URI) names the entry
//                                   (levels=1:2); openat below the held directory, one pread of
//                                   16 KiB, close, one send of the stored head and body (b2)
//
// Two processes (SO_REUSEPORT), each one thread with a level-triggered epoll loop, keep-alive,
// one request per read (wrk sends each request in one segment). The entry format is the
// version-5 header: header_start at byte 54, body_start at byte 56 (little-endian u16).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/md5.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define FIRST_READ 16384

struct conn {
    int fd;
    off_t offset;  // the next body byte to send (mode "one")
    int sending;   // waiting for EPOLLOUT
};

static int one_mode;
static int root_fd;             // "keys": the cache directory
static int entry_fd;            // "one": the entry
static off_t body_start, body_end;
static char stored_head[FIRST_READ];
static size_t stored_head_len;

static void fail(const char *what) {
    perror(what);
    exit(1);
}

static unsigned u16_at(const unsigned char *p) { return p[0] | (unsigned)p[1] << 8; }

// Sends the entry of URI (b2). Returns -1 when the connection should close.
static int send_keyed(int fd, const char *uri, size_t uri_len) {
    static const char hex_digits[] = "0123456789abcdef";
    static unsigned char buffer[FIRST_READ];
    char key[1024], name[64];
    unsigned char md5[16];
    int key_len = snprintf(key, sizeof key, "http://backend%.*s", (int)uri_len, uri);
    if (key_len < 0 || key_len >= (int)sizeof key) return -1;
    MD5((const unsigned char *)key, key_len, md5);
    char hex[33];
    for (int i = 0; i < 16; i++) {
        hex[2 * i] = hex_digits[md5[i] >> 4];
        hex[2 * i + 1] = hex_digits[md5[i] & 15];
    }
    hex[32] = 0;
    snprintf(name, sizeof name, "%c/%c%c/%s", hex[31], hex[29], hex[30], hex);
    int file = openat(root_fd, name, O_RDONLY | O_CLOEXEC);
    if (file < 0) return -1;
    ssize_t got = pread(file, buffer, sizeof buffer, 0);
    close(file);
    if (got < 58) return -1;
    unsigned head = u16_at(buffer + 54);
    if (head >= (size_t)got) return -1;
    return send(fd, buffer + head, got - head, MSG_NOSIGNAL) < 0 ? -1 : 0;
}

static void load_entry(const char *path) {
    unsigned char buffer[FIRST_READ];
    struct stat st;
    entry_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (entry_fd < 0 || fstat(entry_fd, &st) < 0) fail(path);
    ssize_t got = pread(entry_fd, buffer, sizeof buffer, 0);
    if (got < 58) fail("short entry");
    unsigned head = u16_at(buffer + 54), body = u16_at(buffer + 56);
    if (head >= body || body > (size_t)got) fail("entry head not in its first 16 KiB");
    memcpy(stored_head, buffer + head, body - head);
    stored_head_len = body - head;
    body_start = body;
    body_end = st.st_size;
}

static void drop(int epoll, struct conn *c) {
    epoll_ctl(epoll, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c);
}

// Sends what the socket takes of the body; waits for EPOLLOUT when it takes no more.
static int send_body(int epoll, struct conn *c) {
    while (c->offset < body_end) {
        ssize_t sent = sendfile(c->fd, entry_fd, &c->offset, body_end - c->offset);
        if (sent < 0 && errno == EAGAIN) break;
        if (sent <= 0) return -1;
    }
    int waiting = c->offset < body_end;
    if (waiting != c->sending) {
        struct epoll_event event = {.events = waiting ? EPOLLOUT : EPOLLIN, .data.ptr = c};
        epoll_ctl(epoll, EPOLL_CTL_MOD, c->fd, &event);
        c->sending = waiting;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "one") && strcmp(argv[1], "keys"))) {
        fprintf(stderr, "usage: hit_floor one|keys PORT ENTRY_FILE|CACHE_DIR\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    one_mode = !strcmp(argv[1], "one");
    if (one_mode) {
        load_entry(argv[3]);
    } else if ((root_fd = open(argv[3], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fail(argv[3]);
    }
    if (fork() < 0) fail("fork");  // parent and child both serve
    int on = 1;
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    setsockopt(listener, SOL_SOCKET, SO_REUSEPORT, &on, sizeof on);
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(atoi(argv[2]))};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0) fail("bind");
    if (listen(listener, 4096) < 0) fail("listen");
    int epoll = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event event = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event);
    struct epoll_event events[256];
    char request[8192];
    for (;;) {
        int ready = epoll_wait(epoll, events, 256, -1);
        for (int i = 0; i < ready; i++) {
            struct conn *c = events[i].data.ptr;
            if (c == NULL) {
                int fd;
                while ((fd = accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
                    c = calloc(1, sizeof *c);
                    c->fd = fd;
                    struct epoll_event added = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &added);
                }
                continue;
            }
            if (c->sending) {
                if (send_body(epoll, c) < 0) drop(epoll, c);
                continue;
            }
            ssize_t got = recv(c->fd, request, sizeof request - 1, 0);
            if (got < 0 && errno == EAGAIN) continue;
            if (got <= 0) {
                drop(epoll, c);
                continue;
            }
            request[got] = 0;
            if (!one_mode) {
                char *end = got > 4 ? strchr(request + 4, ' ') : NULL;
                if (end == NULL || send_keyed(c->fd, request + 4, end - (request + 4)) < 0) drop(epoll, c);
                continue;
            }
            if (send(c->fd, stored_head, stored_head_len, MSG_MORE | MSG_NOSIGNAL) < 0) {
                drop(epoll, c);
                continue;
            }
            c->offset = body_start;
            if (send_body(epoll, c) < 0) drop(epoll, c);
        }
    }
}
