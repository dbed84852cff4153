/* worker: one thread and a queue of jobs, done callbacks back on the loop (see src/base/worker.h). */
#include "worker.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

struct job {
	struct job *next;
	worker_fn fn;
	worker_done_fn done;
	void *arg;
};

struct worker {
	pthread_t thread;
	bool started, stopping;
	pthread_mutex_t lock;
	pthread_cond_t wake, idle;
	struct job *queue, *queue_tail; /* to run */
	struct job *done, *done_tail;   /* ran: their done callbacks are due */
	bool running;                   /* a job is running now */
	unsigned pending;               /* queued + running + done not called yet */
	int efd;
	sd_event_source *src;
};

static void *thread_main(void *arg)
{
	struct worker *w = arg;
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->queue && !w->stopping)
			pthread_cond_wait(&w->wake, &w->lock);
		if (!w->queue)
			break;
		struct job *j = w->queue;
		w->queue = j->next;
		if (!w->queue)
			w->queue_tail = NULL;
		w->running = true;
		pthread_mutex_unlock(&w->lock);
		j->fn(j->arg);
		pthread_mutex_lock(&w->lock);
		w->running = false;
		j->next = NULL;
		if (w->done_tail)
			w->done_tail->next = j;
		else
			w->done = j;
		w->done_tail = j;
		if (w->efd >= 0) {
			uint64_t one = 1;
			ssize_t n = write(w->efd, &one, sizeof(one));
			(void)n;
		}
		pthread_cond_broadcast(&w->idle);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Runs the done callbacks due, in order, on the calling (loop) thread. One at a time off the shared list: a
 * callback that drains the worker itself (sup_sync) runs the ones after it there, still in order. */
static void run_done(struct worker *w)
{
	for (;;) {
		pthread_mutex_lock(&w->lock);
		struct job *j = w->done;
		if (j) {
			w->done = j->next;
			if (!w->done)
				w->done_tail = NULL;
		}
		pthread_mutex_unlock(&w->lock);
		if (!j)
			return;
		if (j->done)
			j->done(j->arg);
		pthread_mutex_lock(&w->lock);
		w->pending--;
		pthread_mutex_unlock(&w->lock);
		free(j);
	}
}

static int on_eventfd(sd_event_source *src, int fd, uint32_t revents, void *userdata)
{
	uint64_t n;
	ssize_t r = read(fd, &n, sizeof(n));
	(void)r;
	run_done(userdata);
	return 0;
}

int worker_new(sd_event *event, struct worker **ret)
{
	struct worker *w = xcalloc(1, sizeof(*w));
	w->efd = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->wake, NULL);
	pthread_cond_init(&w->idle, NULL);
	int r = 0;
	if (event) {
		w->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (w->efd < 0)
			r = -errno;
		else if ((r = sd_event_add_io(event, &w->src, w->efd, EPOLLIN, on_eventfd, w)) >= 0)
			sd_event_source_set_description(w->src, "worker-done");
	}
	if (r >= 0) {
		/* every signal blocked in the thread: the loop reads them through signalfd */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		int e = pthread_create(&w->thread, NULL, thread_main, w);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		r = -e;
		w->started = e == 0;
	}
	if (r < 0) {
		worker_free(w);
		return r;
	}
	*ret = w;
	return 0;
}

void worker_submit(struct worker *w, worker_fn fn, worker_done_fn done, void *arg)
{
	if (!w) {
		fn(arg);
		if (done)
			done(arg);
		return;
	}
	struct job *j = xcalloc(1, sizeof(*j));
	j->fn = fn;
	j->done = done;
	j->arg = arg;
	pthread_mutex_lock(&w->lock);
	if (w->queue_tail)
		w->queue_tail->next = j;
	else
		w->queue = j;
	w->queue_tail = j;
	w->pending++;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
}

void worker_drain(struct worker *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	while (w->queue || w->running)
		pthread_cond_wait(&w->idle, &w->lock);
	pthread_mutex_unlock(&w->lock);
	run_done(w);
}

bool worker_drain_until(struct worker *w, uint64_t deadline_usec)
{
	if (!w)
		return true;
	struct timespec ts;
	pthread_mutex_lock(&w->lock);
	while (w->queue || w->running) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t now = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
		if (now >= deadline_usec) {
			pthread_mutex_unlock(&w->lock);
			return false;
		}
		/* the condition's clock is the realtime one: the time left, from now on that clock */
		uint64_t left = deadline_usec - now;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t until = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + left * 1000u;
		struct timespec abs = {.tv_sec = (time_t)(until / 1000000000u), .tv_nsec = (long)(until % 1000000000u)};
		pthread_cond_timedwait(&w->idle, &w->lock, &abs);
	}
	pthread_mutex_unlock(&w->lock);
	run_done(w);
	return true;
}

unsigned worker_pending(struct worker *w)
{
	pthread_mutex_lock(&w->lock);
	unsigned n = w->pending;
	pthread_mutex_unlock(&w->lock);
	return n;
}

void worker_free(struct worker *w)
{
	if (!w)
		return;
	if (w->started) {
		worker_drain(w);
		pthread_mutex_lock(&w->lock);
		w->stopping = true;
		pthread_cond_signal(&w->wake);
		pthread_mutex_unlock(&w->lock);
		pthread_join(w->thread, NULL);
	}
	sd_event_source_disable_unref(w->src);
	if (w->efd >= 0)
		close(w->efd);
	pthread_cond_destroy(&w->wake);
	pthread_cond_destroy(&w->idle);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
