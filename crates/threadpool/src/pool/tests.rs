use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::*;

fn settings(threads: usize, max_queue: usize) -> PoolSettings {
    PoolSettings {
        name: "test".to_owned(),
        threads,
        max_queue,
    }
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// Occupies every thread of a pool until the returned sender is dropped or sent to.
fn occupy(pool: &ThreadPool, threads: usize) -> Vec<mpsc::Sender<()>> {
    let (started_tx, started_rx) = mpsc::channel();
    let mut releases = Vec::new();
    for _ in 0..threads {
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let started_tx = started_tx.clone();
        pool.submit(move || {
            started_tx.send(()).unwrap();
            let _ = release_rx.recv();
        })
        .unwrap();
        releases.push(release_tx);
    }
    for _ in 0..threads {
        started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    }
    releases
}

#[test]
fn results_come_back_to_the_submitter() {
    let pool = ThreadPool::start(&settings(2, 16), None).unwrap();
    let results = block_on(async {
        let a = pool.submit(|| 6 * 7).unwrap();
        let b = pool.submit(|| "done").unwrap();
        (a.await, b.await)
    });
    assert_eq!(results, (Ok(42), Ok("done")));
    pool.shutdown();
    assert_eq!(pool.counters().completed, 2);
}

#[test]
fn tasks_are_counted_by_kind() {
    let pool = ThreadPool::start(&settings(1, 16), None).unwrap();
    block_on(async {
        pool.submit_as(TaskKind::Read, || ())
            .unwrap()
            .await
            .unwrap();
        pool.submit_as(TaskKind::Read, || ())
            .unwrap()
            .await
            .unwrap();
        pool.submit_as(TaskKind::Sendfile, || ())
            .unwrap()
            .await
            .unwrap();
        pool.submit(|| ()).unwrap().await.unwrap();
    });
    pool.shutdown();
    let counts = pool.counters();
    let by_name: Vec<(&str, u64)> = TaskKind::ALL
        .iter()
        .map(|kind| (kind.name(), counts.by_kind[*kind as usize]))
        .collect();
    assert_eq!(
        by_name,
        [
            ("open", 0),
            ("read", 2),
            ("sendfile", 1),
            ("write", 0),
            ("other", 1)
        ]
    );
    assert_eq!(counts.by_kind.iter().sum::<u64>(), counts.completed);
}

#[test]
fn overflow_refuses_beyond_max_queue() {
    let pool = ThreadPool::start(&settings(1, 2), None).unwrap();
    let releases = occupy(&pool, 1);
    let first = pool.submit(|| 1).unwrap();
    let second = pool.submit(|| 2).unwrap();
    assert_eq!(pool.submit(|| 3).unwrap_err(), QueueOverflow { waiting: 2 });
    let snapshot = pool.counters();
    assert_eq!(
        (snapshot.queued, snapshot.running, snapshot.overflowed),
        (2, 1, 1)
    );
    drop(releases);
    assert_eq!(
        block_on(async { (first.await, second.await) }),
        (Ok(1), Ok(2))
    );
    pool.shutdown();
    let snapshot = pool.counters();
    assert_eq!(
        (snapshot.queued, snapshot.running, snapshot.completed),
        (0, 0, 3)
    );
}

#[test]
fn abandoned_task_still_runs_and_result_is_dropped() {
    let pool = ThreadPool::start(&settings(1, 4), None).unwrap();
    let ran = Arc::new(AtomicUsize::new(0));
    let releases = occupy(&pool, 1);
    let ran_in_task = Arc::clone(&ran);
    let completion = pool
        .submit(move || {
            ran_in_task.fetch_add(1, Ordering::SeqCst);
            vec![0u8; 1024]
        })
        .unwrap();
    drop(completion);
    drop(releases);
    pool.shutdown();
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

#[test]
fn shutdown_waits_for_queued_and_running_tasks() {
    let pool = ThreadPool::start(&settings(2, 64), None).unwrap();
    let done = Arc::new(AtomicUsize::new(0));
    for _ in 0..20 {
        let done = Arc::clone(&done);
        pool.submit(move || {
            std::thread::sleep(Duration::from_millis(2));
            done.fetch_add(1, Ordering::SeqCst);
        })
        .unwrap();
    }
    pool.shutdown();
    assert_eq!(done.load(Ordering::SeqCst), 20);
    assert!(pool.submit(|| ()).is_err(), "a stopped pool takes no tasks");
}

#[test]
fn panicking_task_is_lost_but_pool_survives() {
    let pool = ThreadPool::start(&settings(1, 4), None).unwrap();
    let lost = pool.submit(|| -> u8 { panic!("task failure") }).unwrap();
    assert_eq!(block_on(lost), Err(TaskLost));
    assert_eq!(block_on(pool.submit(|| 5).unwrap()), Ok(5));
    pool.shutdown();
}

#[test]
fn start_hook_runs_on_every_thread() {
    let started = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&started);
    let hook: ThreadStart = Arc::new(move || {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let pool = ThreadPool::start(&settings(3, 4), Some(hook)).unwrap();
    pool.shutdown();
    assert_eq!(started.load(Ordering::SeqCst), 3);
}

#[test]
fn wait_and_run_times_accumulate() {
    let pool = ThreadPool::start(&settings(1, 4), None).unwrap();
    block_on(
        pool.submit(|| std::thread::sleep(Duration::from_millis(20)))
            .unwrap(),
    )
    .unwrap();
    pool.shutdown();
    assert!(pool.counters().run_time >= Duration::from_millis(20));
}

#[test]
fn max_queue_zero_refuses_every_task() {
    let pool = ThreadPool::start(&settings(2, 0), None).unwrap();
    assert_eq!(pool.submit(|| 1).unwrap_err(), QueueOverflow { waiting: 0 });
    assert_eq!(pool.counters().overflowed, 1);
    assert!(
        !pool.starts_urgent_within(Duration::from_secs(1)),
        "an urgent task would be refused too"
    );
    pool.shutdown();
}

#[test]
fn shutdown_with_abandoned_tasks_in_flight_drops_their_results() {
    let pool = ThreadPool::start(&settings(1, 8), None).unwrap();
    let releases = occupy(&pool, 1);
    let ran = Arc::new(AtomicUsize::new(0));
    let mut completions = Vec::new();
    for _ in 0..3 {
        let ran = Arc::clone(&ran);
        completions.push(
            pool.submit(move || {
                ran.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap(),
        );
    }
    // The submitters go away (their clients closed), then the pool is told to stop while
    // one task runs and three wait.
    drop(completions);
    let stopper = {
        let pool = pool.clone();
        std::thread::spawn(move || pool.shutdown())
    };
    drop(releases);
    stopper.join().unwrap();
    assert_eq!(ran.load(Ordering::SeqCst), 3);
    let snapshot = pool.counters();
    assert_eq!(
        (snapshot.queued, snapshot.running, snapshot.completed),
        (0, 0, 4)
    );
}

#[test]
fn wait_time_counts_time_spent_queued() {
    let pool = ThreadPool::start(&settings(1, 4), None).unwrap();
    let releases = occupy(&pool, 1);
    let waiting = pool.submit(|| ()).unwrap();
    std::thread::sleep(Duration::from_millis(30));
    drop(releases);
    block_on(waiting).unwrap();
    pool.shutdown();
    assert!(pool.counters().wait_time >= Duration::from_millis(30));
}

#[test]
fn a_pool_keeps_up_while_a_thread_is_free_or_its_queue_moves() {
    let pool = ThreadPool::start_lazily(&settings(2, 8), None);
    let soon = Duration::from_millis(10);
    assert!(
        pool.keeps_up(soon),
        "a pool not started yet starts with its first task"
    );
    let first = occupy(&pool, 1);
    assert!(pool.keeps_up(soon), "one of two threads is free");
    let second = occupy(&pool, 1);
    assert!(
        !pool.keeps_up(soon),
        "both threads are busy, nothing waits yet"
    );
    let waiting = pool.submit(|| 7).unwrap();
    assert!(
        pool.keeps_up(Duration::from_secs(3600)),
        "the task has waited under an hour"
    );
    std::thread::sleep(Duration::from_millis(20));
    assert!(!pool.keeps_up(soon), "the task has waited 20 ms");
    drop(second);
    assert_eq!(block_on(waiting), Ok(7));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !pool.keeps_up(soon) {
        assert!(
            std::time::Instant::now() < deadline,
            "a thread is free again"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    drop(first);
    pool.shutdown();
}

/// Runs `body` on a new thread that defers its pools' wakes, as a worker does.
fn on_a_deferring_thread<T: Send + 'static>(body: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        defer_wakes_on_this_thread();
        body()
    })
    .join()
    .unwrap()
}

#[test]
fn a_deferred_task_waits_for_the_turns_wake() {
    let pool = ThreadPool::start(&settings(2, 16), None).unwrap();
    // Both threads asleep on the queue, not still starting (a starting thread looks at the
    // queue before it first sleeps).
    drop(occupy(&pool, 2));
    while pool.counters().completed < 2 {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(50));
    let (ran_tx, ran_rx) = mpsc::channel();
    let submitter = pool.clone();
    let completion = on_a_deferring_thread(move || {
        let completion = submitter
            .submit_deferred_as(TaskKind::Write, move || ran_tx.send(()).unwrap())
            .unwrap();
        // Nothing wakes the pool before the turn ends.
        let early = ran_rx.recv_timeout(Duration::from_millis(100));
        wake_deferred();
        let ran = ran_rx.recv_timeout(Duration::from_secs(10));
        (completion, early, ran)
    });
    let (completion, early, ran) = completion;
    assert!(early.is_err(), "the task ran before the wake");
    assert!(ran.is_ok(), "the wake ran it");
    block_on(completion).unwrap();
    assert_eq!(pool.counters().completed, 3);
}

#[test]
fn deferred_tasks_wake_the_pool_once_enough_wait() {
    let pool = ThreadPool::start(&settings(2, 16), None).unwrap();
    let (ran_tx, ran_rx) = mpsc::channel();
    let submitter = pool.clone();
    let ran = on_a_deferring_thread(move || {
        for _ in 0..DEFERRED_MAX {
            let ran_tx = ran_tx.clone();
            submitter
                .submit_deferred_as(TaskKind::Write, move || ran_tx.send(()).unwrap())
                .unwrap();
        }
        // No wake_deferred: the last submission woke a thread, which takes them all.
        (0..DEFERRED_MAX)
            .filter(|_| ran_rx.recv_timeout(Duration::from_secs(10)).is_ok())
            .count()
    });
    assert_eq!(ran, DEFERRED_MAX);
}

#[test]
fn a_thread_that_does_not_defer_wakes_the_pool_at_once() {
    let pool = ThreadPool::start(&settings(1, 16), None).unwrap();
    let (ran_tx, ran_rx) = mpsc::channel();
    let completion = pool
        .submit_deferred_as(TaskKind::Write, move || ran_tx.send(()).unwrap())
        .unwrap();
    assert!(ran_rx.recv_timeout(Duration::from_secs(10)).is_ok());
    block_on(completion).unwrap();
}

/// Threads kept for urgent tasks: a pool of 8 runs at most 6 ordinary tasks at once, and
/// while those 6 wait (as for a slow disk) and more ordinary tasks queue, an urgent task
/// starts at once on a kept thread.
#[test]
fn an_urgent_task_starts_while_every_ordinary_thread_waits() {
    let pool = ThreadPool::start(&settings(8, 64), None).unwrap();
    assert_eq!(urgent_only_threads(8), 2);
    let releases = occupy(&pool, 6);
    let queued = pool.submit(|| "ordinary").unwrap();
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(pool.counters().running, 6, "the 7th ordinary task waits");
    assert_eq!(pool.counters().queued, 1);
    assert!(pool.starts_urgent_within(Duration::from_millis(1)));
    assert!(
        !pool.keeps_up(Duration::from_millis(1)),
        "the ordinary queue waited 20 ms"
    );
    let urgent = pool
        .submit_urgent_as(TaskKind::Sendfile, || "urgent")
        .unwrap();
    assert_eq!(block_on(urgent), Ok("urgent"));
    assert_eq!(pool.counters().queued, 1, "the ordinary task still waits");
    drop(releases);
    assert_eq!(block_on(queued), Ok("ordinary"));
    pool.shutdown();
    assert_eq!(pool.counters().completed, 8);
}

/// A free thread takes the urgent task before ordinary ones queued earlier.
#[test]
fn urgent_tasks_go_before_the_queue() {
    let pool = ThreadPool::start(&settings(1, 64), None).unwrap();
    assert_eq!(urgent_only_threads(1), 0, "a pool of one keeps no thread");
    let order = Arc::new(Mutex::new(Vec::new()));
    let release = occupy(&pool, 1);
    let mut completions = Vec::new();
    for name in ["first", "second"] {
        let order = Arc::clone(&order);
        completions.push(
            pool.submit(move || order.lock().unwrap().push(name))
                .unwrap(),
        );
    }
    assert!(
        !pool.starts_urgent_within(Duration::ZERO),
        "the only thread is busy"
    );
    let urgent = {
        let order = Arc::clone(&order);
        pool.submit_urgent_as(TaskKind::Sendfile, move || {
            order.lock().unwrap().push("urgent")
        })
        .unwrap()
    };
    drop(release);
    block_on(async {
        urgent.await.unwrap();
        for completion in completions {
            completion.await.unwrap();
        }
    });
    assert_eq!(*order.lock().unwrap(), ["urgent", "first", "second"]);
    pool.shutdown();
}

/// Urgent tasks count against `max_queue`, and shutdown still runs every queued task when
/// ordinary ones waited for a thread slot.
#[test]
fn urgent_tasks_share_the_queue_limit_and_shutdown_drains_both() {
    let pool = ThreadPool::start(&settings(4, 2), None).unwrap();
    // One at a time: three submitted at once could overflow the queue of 2 before a
    // thread takes them.
    let releases: Vec<_> = (0..3).flat_map(|_| occupy(&pool, 1)).collect();
    let ordinary = pool.submit(|| 1).unwrap();
    let urgent_blocker = occupy_urgent(&pool);
    let urgent = pool.submit_urgent_as(TaskKind::Sendfile, || 2).unwrap();
    assert_eq!(
        pool.submit_urgent_as(TaskKind::Sendfile, || 3).err(),
        Some(QueueOverflow { waiting: 2 })
    );
    drop(urgent_blocker);
    drop(releases);
    let stopper = {
        let pool = pool.clone();
        std::thread::spawn(move || pool.shutdown())
    };
    assert_eq!(block_on(urgent), Ok(2));
    assert_eq!(block_on(ordinary), Ok(1));
    stopper.join().unwrap();
}

/// Occupies the thread a pool of 4 keeps for urgent tasks.
fn occupy_urgent(pool: &ThreadPool) -> mpsc::Sender<()> {
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    pool.submit_urgent_as(TaskKind::Other, move || {
        started_tx.send(()).unwrap();
        let _ = release_rx.recv();
    })
    .unwrap();
    started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    release_tx
}

/// A thread whose task has its result counts as free before it gets back to its wait: the
/// submitter, woken by the result, asks about the next piece at once, and on a loaded
/// machine the thread may not have run again by then. Here the thread is held in that
/// moment by the test holding the pool's lock, which it needs to wait again.
#[test]
fn a_thread_returning_from_its_task_counts_as_free() {
    let pool = ThreadPool::start(&settings(1, 64), None).unwrap();
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let piece = pool
        .submit_urgent_as(TaskKind::Sendfile, move || {
            started_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            "sent"
        })
        .unwrap();
    started_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    {
        let state = pool.shared.lock();
        assert!(
            !pool.starts_urgent_in(&state, Duration::ZERO),
            "the only thread runs a task"
        );
        release_tx.send(()).unwrap();
        assert_eq!(block_on(piece), Ok("sent"));
        assert_eq!(state.idle, 0, "the thread waits for the lock, not for work");
        assert!(pool.starts_urgent_in(&state, Duration::ZERO));
    }
    pool.shutdown();
    assert_eq!(pool.shared.returning.load(Ordering::Relaxed), 0);
}
