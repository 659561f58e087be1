// The life of an operation as one value, and the table every change of it goes through.

// MARK: - Phase and its transition table

extension OperationCore {
    /// Where an operation is in its life.
    enum Phase {
        /// In no queue and not started.
        case idle
        /// In a queue, not known to be ready (dependencies pending, or not checked yet).
        case waiting
        /// In a queue with its dependencies done; a thread is reading `isReady`.
        case checking
        /// In a queue with its dependencies done, but `isReady` read false: waits for an
        /// `isReady` announcement.
        case parked
        /// In its queue's ready list.
        case ready
        /// Claimed by a queue worker, which calls `start()`; holds a slot of the queue.
        /// An asynchronous subclass that overrides `start()` stays here until it finishes.
        case dispatched
        /// The base `start()` runs `main()` (or, for the library's own asynchronous
        /// operations, waits for the work `main()` started).
        case executing(byQueue: Bool)
        /// The base `start()` is done and the base state says finished (a base `isFinished`
        /// reads true); the thread that made it so has yet to announce it and let the
        /// getter decide (`finish`, or `baseFinishAnnounced` when the getter reads false).
        case announcingBaseFinish(byQueue: Bool)
        /// The base `start()` returned and the base state says finished, but the subclass
        /// overrides `isFinished` and its getter did not read true when the base finish was
        /// announced: the operation keeps
        /// its queue, its slot and its dependents until it announces `isFinished` reading
        /// true (the frameworks' pattern: `super.start()`, asynchronous work begun in `main()`).
        case awaitingFinish(byQueue: Bool)
        /// Finished (the getters say so); the finish is being processed: dependents
        /// released, slot freed, completion block run. Happens exactly once.
        case finishing(byQueue: Bool, OutcomeKind)
        /// The finish was processed; the observers of `isFinished` are being told and the
        /// waiters woken. A wait that begins now joins them.
        case announcing(OutcomeKind)
        /// Done: the finish was processed, the observers told, the waiters woken. A wait
        /// returns at once.
        case finished(OutcomeKind)

        /// The events that move an operation.
        enum Event: CaseIterable {
            /// Added to a queue.
            case enqueue
            /// Taken out of a queue again (a refused batch is undone).
            case withdraw
            /// Dependencies done: a thread starts reading `isReady`.
            case beginCheck
            /// The check read `isReady` true: into the ready list.
            case confirmReady
            /// The check read `isReady` false.
            case denyReady
            /// It gained a dependency while being checked or in the ready list.
            case loseReadiness
            /// A queue worker takes it from the ready list.
            case claim
            /// The claiming worker found `isReady` false after all.
            case unclaim
            /// The base `start()` begins running `main()`.
            case start
            /// The base `start()` is done with the operation (`main()` returned, or it was
            /// cancelled): the base state says finished. Whether the operation is finished is
            /// for its `isFinished` getter to say (`finish`).
            case baseFinish
            /// The base finish was announced and the `isFinished` getter read false: the
            /// subclass announces its own finish.
            case baseFinishAnnounced
            /// It finished: the base `start()` returned, a cancelled start, or `isFinished`
            /// announced by a subclass.
            case finish
            /// The finish has been processed; the observers are told next.
            case processed
            /// The observers were told and the waiters woken.
            case complete
        }

        /// The phase without payloads, for tables and messages.
        enum Kind: CaseIterable {
            case idle, waiting, checking, parked, ready, dispatched, executing, announcingBaseFinish, awaitingFinish, finishing,
                announcing, finished
        }

        var kind: Kind {
            switch self {
            case .idle: .idle
            case .waiting: .waiting
            case .checking: .checking
            case .parked: .parked
            case .ready: .ready
            case .dispatched: .dispatched
            case .executing: .executing
            case .announcingBaseFinish: .announcingBaseFinish
            case .awaitingFinish: .awaitingFinish
            case .finishing: .finishing
            case .announcing: .announcing
            case .finished: .finished
            }
        }

        /// The transition table: the phase after `event`, or nil when the event is refused
        /// in this phase. Payloads (who started it, the outcome) are filled in by the
        /// caller where the table cannot know them: see `startedByQueue` and `finish`.
        ///
        /// | from                                   | event          | to          |
        /// |----------------------------------------|----------------|-------------|
        /// | idle                                   | enqueue        | waiting     |
        /// | waiting, checking, parked, ready       | withdraw       | idle        |
        /// | waiting, parked                        | beginCheck     | checking    |
        /// | checking                               | confirmReady   | ready       |
        /// | checking                               | denyReady      | parked      |
        /// | checking, parked, ready                | loseReadiness  | waiting     |
        /// | ready                                  | claim          | dispatched  |
        /// | dispatched                             | unclaim        | parked      |
        /// | idle … ready (by hand), dispatched     | start          | executing   |
        /// | idle … executing                       | baseFinish     | announcingBaseFinish |
        /// | announcingBaseFinish                   | baseFinishAnnounced | awaitingFinish |
        /// | anything before finishing              | finish         | finishing   |
        /// | finishing                              | processed      | announcing  |
        /// | announcing                             | complete       | finished    |
        ///
        /// Every (phase, event) pair is written out, the refused ones as nil: a new phase or
        /// event does not compile until the table says what it does with it.
        func after(_ event: Event) -> Phase? {
            switch event {
            case .enqueue:
                switch self {
                case .idle: .waiting
                case .waiting, .checking, .parked, .ready, .dispatched, .executing, .announcingBaseFinish, .awaitingFinish, .finishing,
                    .announcing, .finished:
                    nil
                }
            case .withdraw:
                switch self {
                case .waiting, .checking, .parked, .ready: .idle
                case .idle, .dispatched, .executing, .announcingBaseFinish, .awaitingFinish, .finishing, .announcing, .finished: nil
                }
            case .beginCheck:
                switch self {
                case .waiting, .parked: .checking
                case .idle, .checking, .ready, .dispatched, .executing, .announcingBaseFinish, .awaitingFinish, .finishing, .announcing,
                    .finished:
                    nil
                }
            case .confirmReady:
                switch self {
                case .checking: .ready
                case .idle, .waiting, .parked, .ready, .dispatched, .executing, .announcingBaseFinish, .awaitingFinish, .finishing,
                    .announcing, .finished:
                    nil
                }
            case .denyReady:
                switch self {
                case .checking: .parked
                case .idle, .waiting, .parked, .ready, .dispatched, .executing, .announcingBaseFinish, .awaitingFinish, .finishing,
                    .announcing, .finished:
                    nil
                }
            case .loseReadiness:
                switch self {
                case .checking, .parked, .ready: .waiting
                case .idle, .waiting, .dispatched, .executing, .announcingBaseFinish, .awaitingFinish, .finishing, .announcing, .finished:
                    nil
                }
            case .claim:
                switch self {
                case .ready: .dispatched
                case .idle, .waiting, .checking, .parked, .dispatched, .executing, .announcingBaseFinish, .awaitingFinish, .finishing,
                    .announcing, .finished:
                    nil
                }
            case .unclaim:
                switch self {
                case .dispatched: .parked
                case .idle, .waiting, .checking, .parked, .ready, .executing, .announcingBaseFinish, .awaitingFinish, .finishing,
                    .announcing, .finished:
                    nil
                }
            case .start:
                switch self {
                case .dispatched: .executing(byQueue: true)
                case .idle, .waiting, .checking, .parked, .ready: .executing(byQueue: false)
                case .executing, .announcingBaseFinish, .awaitingFinish, .finishing, .announcing, .finished: nil
                }
            case .baseFinish:
                switch self {
                case .dispatched: .announcingBaseFinish(byQueue: true)
                case .executing(let byQueue): .announcingBaseFinish(byQueue: byQueue)
                case .idle, .waiting, .checking, .parked, .ready: .announcingBaseFinish(byQueue: false)
                case .announcingBaseFinish, .awaitingFinish, .finishing, .announcing, .finished: nil
                }
            case .baseFinishAnnounced:
                switch self {
                case .announcingBaseFinish(let byQueue): .awaitingFinish(byQueue: byQueue)
                case .idle, .waiting, .checking, .parked, .ready, .dispatched, .executing, .awaitingFinish, .finishing,
                    .announcing, .finished:
                    nil
                }
            case .finish:
                switch self {
                case .dispatched: .finishing(byQueue: true, .succeeded)
                case .executing(let byQueue), .announcingBaseFinish(let byQueue), .awaitingFinish(let byQueue):
                    .finishing(byQueue: byQueue, .succeeded)
                case .idle, .waiting, .checking, .parked, .ready: .finishing(byQueue: false, .succeeded)
                case .finishing, .announcing, .finished: nil
                }
            case .processed:
                switch self {
                case .finishing(_, let outcome): .announcing(outcome)
                case .idle, .waiting, .checking, .parked, .ready, .dispatched, .executing, .announcingBaseFinish, .awaitingFinish,
                    .announcing, .finished:
                    nil
                }
            case .complete:
                switch self {
                case .announcing(let outcome): .finished(outcome)
                case .idle, .waiting, .checking, .parked, .ready, .dispatched, .executing, .announcingBaseFinish, .awaitingFinish,
                    .finishing, .finished:
                    nil
                }
            }
        }

        /// A phase in which an `isFinished` reading true was not announced: the engine has
        /// not heard of a finish, and no announcement of the base finish is under way.
        var isUnannouncedIfFinished: Bool {
            switch self {
            case .dispatched, .executing, .awaitingFinish: true
            default: false
            }
        }

        var isFinishingOrFinished: Bool {
            switch self {
            case .finishing, .announcing, .finished: true
            default: false
            }
        }

        /// How far towards running its work it is, for cancelling several operations (see
        /// `Operation._cancelNotRunningFirst`).
        enum StartStage: Comparable {
            /// Neither claimed by a worker nor started (or finishing: a cancel is nothing).
            case waiting
            /// Claimed by one of its queue's workers, which calls `start()`: its start, if
            /// it is cancelled first, frees the slot without running the work. (An
            /// asynchronous subclass that overrides `start()` stays here while it runs.)
            case claimed
            /// Started: its work runs, or waits to be announced finished.
            case started
        }

        var startStage: StartStage {
            switch self {
            case .idle, .waiting, .checking, .parked, .ready, .finishing, .announcing, .finished: .waiting
            case .dispatched: .claimed
            case .executing, .announcingBaseFinish, .awaitingFinish: .started
            }
        }

        /// Between being added to a queue and being claimed by one of its workers.
        var isQueuedNotClaimed: Bool {
            switch self {
            case .waiting, .checking, .parked, .ready: true
            default: false
            }
        }
    }
}
