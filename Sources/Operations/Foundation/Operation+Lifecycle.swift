// The announcement of `isFinished` and the work done once when an operation finishes (the
// sections of its lock are the engine's: `Engine/Operation/OperationStorage+Finish.swift`;
// readiness is `Engine/Operation/OperationStorage+Readiness.swift`).
//
// Vocabulary: an operation *finishes* once (the `finish` event: its getters say finished);
// the engine then *processes* the finish (dependents, slot, completion block) and the
// operation is *finished* for good (`complete`); then the observers of `isFinished` are
// told, and then waiters wake.

extension Operation {
    /// The one way a finish is announced, by the base class or by a subclass (directly or
    /// through a key `isFinished` depends on): when the (possibly overridden) `isFinished`
    /// reads true for the first time, the finish is processed — dependents released,
    /// completion block run, the operation out of its queue — then `announce` tells the
    /// observers, then waits return. So an observer of `isFinished` finds the queue done
    /// with the operation, and a wait returns only after the observers were told.
    ///
    /// An announcement made on another thread while the finish is processed or announced (a
    /// subclass announcing its state just as its queue's worker finishes it) is handed to the
    /// thread doing that, which makes it once the queue is done with the operation and
    /// before it wakes the next waiter: like every observer of the finish, after the
    /// completion block (a completion block that waits for such an observer waits for
    /// itself). Made on that thread itself (by the completion block, or an observer of a
    /// dependent), or on Darwin, where KVO pairs an announcement with its thread, it is made
    /// at once. Only observers registered when the finish began make the queue count the
    /// operation for its waits until they were told.
    final func _processFinishThenAnnounce(_ announcement: FinishAnnouncement, mayFinish: Bool = true) {
        let taken = _take(announcement)
        let finished = isFinished
        // Observed: announcements made on this thread while it finishes the operation are
        // made at once, never handed over to itself.
        guard finished, mayFinish, var finish = _finishFinally(announcingOn: taken == nil ? nil : OperationEvent.currentThread)
        else {
            // Not a finish this announcement makes: it is made now, or, while another thread
            // processes or announces the finish, by that thread.
            guard let taken else { return }
            if finished, let later = _later(taken), _handOver(later, from: OperationEvent.currentThread) {
                return
            }
            return _make(taken)
        }
        // With observers, the queue counts the operation for its waits until they were told,
        // and so does the operation.
        let observed = _hasObservers
        let announcing = observed && finish.queue != nil
        _releaseDependents(&finish)
        finish.unusedErrors = nil
        guard let completionBlock = finish.completionBlock.take() else {
            let queueWaiters = finish.queue?._operationFinished(
                self, releasesSlot: finish.releasesSlot, leaves: true, announcing: announcing,
                deferrable: !finish.hasWaiters) ?? []
            return _completeFinish(taken, queueWaiters, in: finish.queue, announcing: announcing, observed: observed)
        }
        // The slot is free at once; the operation stays in its queue (counted for its waits)
        // until its completion block has run, after the `start()` that finished it returned.
        let queueWaiters = finish.queue?._operationFinished(self, releasesSlot: finish.releasesSlot, leaves: false) ?? []
        PendingCompletion(
            operation: self, completionBlock: completionBlock, queue: finish.queue, queueWaiters: queueWaiters,
            announcement: taken, announcing: announcing, observed: observed
        ).runAfterStart()
    }

    /// The end of a processed finish, once the completion block (if any) has run and the
    /// operation left its queue: completes it, tells its observers, wakes its waiters.
    final func _completeFinish(
        _ taken: TakenAnnouncement?, _ queueWaiters: [QueueWaiter], in finishQueue: OperationQueue?,
        announcing: Bool, observed: Bool
    ) {
        let completion = _complete(observersToTell: observed)
        if !completion.hiddenDependencies.isEmpty {
            // A cancelled operation may finish before a barrier it waited for: off its list.
            _leaveDependentsLists(of: completion.hiddenDependencies)
            ReleasePool.release(completion.hiddenDependencies)
        }
        let wakeups = FinishWakeups(
            queueWaiters: queueWaiters, waiters: completion.waiters, outcome: completion.outcome,
            settles: completion.settles)
        let queue = announcing ? finishQueue : nil
        // Nothing waited and no one to tell: the operation is finished already, and a wait
        // returns at once. (No closure on this path: it is every operation's.)
        guard wakeups.settles else { return _tellAndWake(taken, wakeups, announcedIn: queue) }
        // The operation is finished once its observers were told and its waiters woken: a
        // wait that begins meanwhile joins them (it returns after the observers and the hooks
        // registered before it, such as an observer's finish), and a wait made from this
        // thread, from an observer or a hook, returns at once (it would wait for itself).
        // A finish set off by this one's hooks or observers (a group's last child ends the
        // group) is announced the same way, nested; deep nesting is handed back to the
        // outermost announcement on this thread (see `NestedAnnouncements`).
        NestedAnnouncements.run { [self] in
            CompletionBlockScope.run({
                _tellAndWake(taken, wakeups, announcedIn: queue, settling: true)
                while let more = _settle() {
                    for announcement in more.announcements { announcement() }
                    for waiter in more.waiters {
                        _makeHandedOver()
                        waiter.wake(more.outcome)
                    }
                }
            }, of: self, in: nil)
        }
    }

    /// Tells the observers (and taps) that the operation finished, then wakes what its
    /// finish ends. `queue`: the queue that counts the operation for its waits until its
    /// observers were told.
    /// `settling`: the operation is announcing (see `OperationCore.settle()`); other threads
    /// may hand over their announcements until the waiters are woken.
    private func _tellAndWake(
        _ announcement: TakenAnnouncement?, _ wakeups: FinishWakeups, announcedIn queue: OperationQueue?,
        settling: Bool = false
    ) {
        var wakeups = wakeups
        if let queue {
            // While its observers are told, the queue counts it for its waits: a queue wait
            // made from one of them waits for the others (as from a completion block).
            CompletionBlockScope.run({ _make(announcement, settling: settling) }, of: self, in: queue)
        } else {
            _make(announcement, settling: settling)
        }
        if _hasExtras { _deliverLifecycleEvents() }
        if let queue { wakeups.queueWaiters += queue._finishAnnounced() }
        if settling {
            // Waiters run user code: what it sets off on other threads is handed over, and
            // made before the next waiter is woken.
            wakeups.wake(before: _makeHandedOver)
        } else {
            wakeups.wake()
        }
    }

    /// Makes the finish's own announcement, then, while `settling`, those other threads
    /// handed over, until none is left.
    private func _make(_ announcement: TakenAnnouncement?, settling: Bool) {
        _make(announcement)
        if settling { _makeHandedOver() }
    }

    /// Makes the announcements other threads handed over, until none is left.
    private func _makeHandedOver() {
        while case let handedOver = _takeHandedOverAnnouncements(), !handedOver.isEmpty {
            for made in handedOver { made() }
        }
    }

    /// Pairs the announcement with its `willChangeValue(forKey:)` on this thread, so that it
    /// can be made later, from another thread (on Linux); nil when nothing observes.
    private func _take(_ announcement: FinishAnnouncement) -> TakenAnnouncement? {
        #if canImport(ObjectiveC)
        return announcement
        #else
        guard let registry = _observationRegistry else { return nil }
        switch announcement {
        case .announce(let key), .observers(let key):
            // Both reach the registry: the base `didChangeValue(forKey:)` is its `didChange`.
            return TakenAnnouncement(registry: registry, change: registry.takeChange(key: key))
        }
        #endif
    }

    /// Tells the observers of the key that announced the finish.
    private func _make(_ announcement: TakenAnnouncement?) {
        guard let announcement else { return }
        #if canImport(ObjectiveC)
        switch announcement {
        case .announce(let key): _announceDidChange(key)
        case .observers(let key): _observersDidChangeValue(forKey: key)
        }
        #else
        announcement.registry.deliver(announcement.change, of: self)
        #endif
    }

    /// The announcement as another thread makes it; nil when it cannot be handed over:
    /// this thread processes the finish (its completion block announces), and would hand it
    /// to itself, or on Darwin.
    private func _later(_ announcement: TakenAnnouncement) -> (@Sendable () -> Void)? {
        #if canImport(ObjectiveC)
        return nil
        #else
        guard !CompletionBlockScope.isRunning(for: self) else { return nil }
        return { [self] in _make(announcement) }
        #endif
    }

    /// Whether its finish, once its queue slot is freed, runs no user code and wakes nothing
    /// that could wait for the next operation: no completion block, no observers, no
    /// lifecycle taps or hooks, nobody waiting for it. (Read before the finish; a `BodySlot`
    /// hands its task to the next body only after such a finish.)
    final var _finishesQuietly: Bool {
        !_hasObservers && !_hasExtras && _readState { $0.completionBlock == nil && $0.finishWaiters.isEmpty }
    }

    /// The first of the work done exactly once when the operation finishes: release
    /// dependents, end gates, release the work. (`inout`, so that the references it drops
    /// are released here, not by the caller.)
    private func _releaseDependents(_ finish: inout OperationCore.Finish) {
        // The finished event goes out before any dependent can start.
        finish.queue?._deliverEvents(waitingForDelivery: true)
        finish.dependentsToTell.forEach { $0._dependencyFinished(self) }
        // Dropped here, with no lock held: a reference may be a dependent's last.
        finish.dependentsToTell = OperationCore.Dependents()
        if _visibleGated { _endGates(because: .finished) }
        _releaseWork()
    }
}

/// The waits a processed finish ends: its queue's (the queue became empty, or has room for
/// a producer) and the operation's own.
struct FinishWakeups {
    var queueWaiters: [QueueWaiter]
    var waiters: [FinishWaiter]
    var outcome: Operation.Outcome?
    /// The operation is finished only once these were woken and its observers told.
    var settles: Bool

    /// The operation's own first (hooks such as an observer's finish among them), then its
    /// queue's: a wait for the queue returns after what the operation's end set off.
    func wake() {
        if !waiters.isEmpty { for waiter in waiters { waiter.wake(outcome) } }
        if !queueWaiters.isEmpty { for waiter in queueWaiters { waiter.wake() } }
    }

    /// The same, calling `before` before each one is woken.
    func wake(before: () -> Void) {
        for waiter in waiters {
            before()
            waiter.wake(outcome)
        }
        for waiter in queueWaiters {
            before()
            waiter.wake()
        }
    }
}

/// Announcements of finishes nested in other announcements on one thread: the hooks and
/// observers told that an operation finished may finish another (a group's last child
/// ends the group, whose end ends its parent …), each inside the one before. Up to
/// ``depthLimit`` levels run nested, as they happen; deeper ones are handed to the
/// outermost announcement on the thread, which runs them in turn once the one it runs has
/// returned. So nesting of any depth takes a bounded stack.
///
/// A handed-back announcement happens later on the same thread: until then its operation
/// counts as finishing (a wait for it joins its waiters). A blocking wait on that thread
/// runs the handed-back announcements first (``runHandedBack()``): it could be waiting
/// for one of them.
package enum NestedAnnouncements {
    package static let depthLimit = 16

    /// The announcements of one thread.
    /// - Note: `@unchecked Sendable`: only the thread whose thread-local slot points at it
    ///   touches it.
    private final class Frame: @unchecked Sendable {
        var depth = 0
        var handedBack: [() -> Void] = []
        var next = 0
    }

    private static let current = ThreadLocalPointer()

    static func run(_ announcement: @escaping () -> Void) {
        if let pointer = current.value {
            let frame = Unmanaged<Frame>.fromOpaque(pointer).takeUnretainedValue()
            guard frame.depth < depthLimit else {
                frame.handedBack.append(announcement)
                return
            }
            frame.depth += 1
            announcement()
            frame.depth -= 1
            return
        }
        let frame = Frame()
        current.set(Unmanaged.passUnretained(frame).toOpaque())
        frame.depth = 1
        announcement()
        runHandedBack(frame)
        current.set(nil)
        withExtendedLifetime(frame) {}
    }

    /// Runs the announcements handed back on this thread that have not run yet (a thread
    /// about to block must not wait for one of them).
    static func runHandedBack() {
        guard let pointer = current.value else { return }
        runHandedBack(Unmanaged<Frame>.fromOpaque(pointer).takeUnretainedValue())
    }

    /// In the order handed back: each may hand back more.
    private static func runHandedBack(_ frame: Frame) {
        while frame.next < frame.handedBack.count {
            let next = frame.handedBack[frame.next]
            frame.handedBack[frame.next] = {}
            frame.next += 1
            next()
        }
    }
}

/// How a processed finish is told to the observers: by announcing a key (the base class's
/// own finish), or by passing a subclass's announcement of a key on to them.
enum FinishAnnouncement {
    case announce(String)
    case observers(String)
}

#if canImport(ObjectiveC)
/// On Darwin, a finish announcement is made on the thread that announced it.
typealias TakenAnnouncement = FinishAnnouncement
#else
/// A finish announcement taken on the thread that announced it: the change paired with its
/// `willChangeValue(forKey:)`, ready to be delivered from any thread. Made only when
/// something observes the operation.
final class TakenAnnouncement: Sendable {
    let registry: ObservationRegistry
    let change: ObservationRegistry.TakenChange

    init(registry: ObservationRegistry, change: ObservationRegistry.TakenChange) {
        self.registry = registry
        self.change = change
    }
}
#endif
