/* hookproc: a program asked a question on its stdin, answering on its stdout, with a deadline (see
 * src/flink/hookproc.h). */
#include "hookproc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jvm.h"

extern char **environ;

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int hookproc_start(struct hookproc *h, const char *path, const char *input, size_t len)
{
	memset(h, 0, sizeof(*h));
	h->in = h->out = h->err = -1;
	char *argv[] = {(char *)path, NULL};
	int r = jvm_spawn_piped(argv, environ, NULL, &h->pid, &h->in, &h->out, &h->err);
	if (r < 0) {
		h->pid = 0;
		return r;
	}
	fcntl(h->in, F_SETFL, fcntl(h->in, F_GETFL) | O_NONBLOCK);
	fcntl(h->out, F_SETFL, fcntl(h->out, F_GETFL) | O_NONBLOCK);
	fcntl(h->err, F_SETFL, fcntl(h->err, F_GETFL) | O_NONBLOCK);
	h->input = xmalloc(len ? len : 1);
	memcpy(h->input, input, len);
	h->input_len = len;
	return 0;
}

static void write_input(struct hookproc *h)
{
	while (h->in >= 0 && h->written < h->input_len) {
		ssize_t n = write(h->in, h->input + h->written, h->input_len - h->written);
		if (n > 0)
			h->written += (size_t)n;
		else if (n < 0 && errno == EINTR)
			continue;
		else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		else
			break; /* EPIPE: it closed its stdin without reading all of it (its business) */
	}
	close_fd(&h->in); /* all of it written: the end of its input */
}

/* Reads fd until it would block; at its end the descriptor is closed. */
static void read_output(int *fd, struct strbuf *b, size_t max, bool keep_end, bool *ret_over)
{
	char buf[65536];
	while (*fd >= 0) {
		ssize_t n = read(*fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			close_fd(fd);
			return;
		}
		if (keep_end) {
			strbuf_appendn(b, buf, (size_t)n);
			if (b->len > 2 * max) { /* keep the last max bytes */
				memmove(b->buf, b->buf + b->len - max, max);
				b->len = max;
				b->buf[max] = '\0';
			}
		} else if (b->len + (size_t)n > max) {
			*ret_over = true; /* the rest is read and dropped, so that it never blocks on a full pipe */
		} else {
			strbuf_appendn(b, buf, (size_t)n);
		}
	}
}

bool hookproc_pump(struct hookproc *h)
{
	write_input(h);
	read_output(&h->out, &h->answer, HOOKPROC_MAX_ANSWER, false, &h->answer_too_long);
	read_output(&h->err, &h->errors, HOOKPROC_STDERR_KEPT, true, NULL);
	return h->out < 0 && h->err < 0;
}

void hookproc_kill(struct hookproc *h, bool deadline)
{
	if (h->pid > 0)
		jvm_signal(h->pid, SIGKILL);
	if (deadline)
		h->timed_out = true;
}

char *hookproc_failure(const struct hookproc *h, int exit_code, int exit_signal, int64_t timeout_ms)
{
	if (h->timed_out)
		return timeout_ms % 1000 ? xasprintf("did not answer within %lld ms", (long long)timeout_ms)
		                         : xasprintf("did not answer within %lld s", (long long)(timeout_ms / 1000));
	if (exit_signal >= 0)
		return xasprintf("was killed by signal %d (%s)", exit_signal, strsignal(exit_signal));
	if (exit_code != 0)
		return xasprintf("exited with code %d", exit_code);
	if (h->answer_too_long)
		return xasprintf("wrote more than %u bytes on its standard output", HOOKPROC_MAX_ANSWER);
	return NULL;
}

char *hookproc_errors_tail(const struct hookproc *h, size_t max)
{
	const char *s = h->errors.buf ? h->errors.buf : "";
	size_t n = h->errors.len;
	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		n--;
	size_t from = n > max ? n - max : 0;
	char *out = xstrndup(s + from, n - from);
	for (char *c = out; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	return out;
}

void hookproc_close(struct hookproc *h)
{
	close_fd(&h->in);
	close_fd(&h->out);
	close_fd(&h->err);
	free(h->input);
	h->input = NULL;
	strbuf_free(&h->answer);
	strbuf_free(&h->errors);
}

/* Blocking: the program's exit, whatever its descriptors do (a child of its own may keep them open). */
static void wait_exit(struct hookproc *h, usec_t deadline, int *ret_status)
{
	for (;;) {
		bool ended = hookproc_pump(h);
		pid_t p = waitpid(h->pid, ret_status, WNOHANG);
		if (p == h->pid)
			return;
		if (p < 0 && errno != EINTR) {
			*ret_status = 0;
			return;
		}
		usec_t now = now_monotonic();
		if (now >= deadline && !h->timed_out) {
			hookproc_kill(h, true);
			while (waitpid(h->pid, ret_status, 0) < 0 && errno == EINTR)
				;
			return;
		}
		struct pollfd fds[3];
		nfds_t n = 0;
		if (h->in >= 0)
			fds[n++] = (struct pollfd){.fd = h->in, .events = POLLOUT};
		if (h->out >= 0)
			fds[n++] = (struct pollfd){.fd = h->out, .events = POLLIN};
		if (h->err >= 0)
			fds[n++] = (struct pollfd){.fd = h->err, .events = POLLIN};
		int64_t left_ms = (int64_t)((deadline - now) / USEC_PER_MSEC) + 1;
		/* its exit is not an event poll sees: a short wait at a time */
		int64_t wait_ms = ended ? 10 : 100;
		poll(fds, n, (int)(wait_ms < left_ms ? wait_ms : left_ms));
	}
}

void hookproc_run(struct hookproc *h, const char *path, const char *input, size_t len, int64_t timeout_ms,
                  char **ret_failure)
{
	*ret_failure = NULL;
	void (*was)(int) = signal(SIGPIPE, SIG_IGN); /* its stdin closed early: EPIPE, not the end of flinklet */
	int r = hookproc_start(h, path, input, len);
	if (r < 0) {
		*ret_failure = xasprintf("could not be run: %s", strerror(-r));
		signal(SIGPIPE, was);
		return;
	}
	int status = 0;
	wait_exit(h, now_monotonic() + (usec_t)timeout_ms * USEC_PER_MSEC, &status);
	jvm_kill_group(h->pid); /* what it left running */
	hookproc_pump(h);       /* what it wrote before it ended */
	h->pid = 0;
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1, sig = WIFSIGNALED(status) ? WTERMSIG(status) : -1;
	*ret_failure = hookproc_failure(h, code, sig, timeout_ms);
	signal(SIGPIPE, was);
}
