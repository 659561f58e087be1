@testable import Operations
@testable import OperationsComposition
import Testing

/// The operation state machine's transition table, checked over every (phase, event) pair
/// against a table written out here independently.
@Suite("Operation state machine: the transition table")
struct TransitionTableTests {
    typealias Phase = OperationCore.Phase
    typealias Kind = Phase.Kind
    typealias Event = Phase.Event

    /// A phase of each kind (payloads chosen arbitrarily; the table does not depend on them
    /// except to carry them along).
    static let samples: [Phase] = [
        .idle, .waiting, .checking, .parked, .ready, .dispatched, .executing(byQueue: true),
        .announcingBaseFinish(byQueue: true), .awaitingFinish(byQueue: true), .finishing(byQueue: true, .succeeded), .announcing(.succeeded),
        .finished(.succeeded),
    ]

    /// The legal moves; every pair not listed must be refused.
    static let legal: [Kind: [Event: Kind]] = [
        .idle: [.enqueue: .waiting, .start: .executing, .baseFinish: .announcingBaseFinish, .finish: .finishing],
        .waiting: [
            .withdraw: .idle, .beginCheck: .checking, .start: .executing, .baseFinish: .announcingBaseFinish,
            .finish: .finishing,
        ],
        .checking: [
            .withdraw: .idle, .confirmReady: .ready, .denyReady: .parked, .loseReadiness: .waiting,
            .start: .executing, .baseFinish: .announcingBaseFinish, .finish: .finishing,
        ],
        .parked: [
            .withdraw: .idle, .beginCheck: .checking, .loseReadiness: .waiting, .start: .executing,
            .baseFinish: .announcingBaseFinish, .finish: .finishing,
        ],
        .ready: [
            .withdraw: .idle, .loseReadiness: .waiting, .claim: .dispatched, .start: .executing,
            .baseFinish: .announcingBaseFinish, .finish: .finishing,
        ],
        .dispatched: [.unclaim: .parked, .start: .executing, .baseFinish: .announcingBaseFinish, .finish: .finishing],
        .executing: [.baseFinish: .announcingBaseFinish, .finish: .finishing],
        .announcingBaseFinish: [.baseFinishAnnounced: .awaitingFinish, .finish: .finishing],
        .awaitingFinish: [.finish: .finishing],
        .finishing: [.processed: .announcing],
        .announcing: [.complete: .finished],
        .finished: [:],
    ]

    @Test("every (phase, event) pair moves as the table says or is refused")
    func everyPair() {
        #expect(Self.samples.map(\.kind) == Kind.allCases)
        var checked = 0
        for phase in Self.samples {
            for event in Event.allCases {
                let expected = Self.legal[phase.kind]?[event]
                #expect(phase.after(event)?.kind == expected, "\(phase.kind) on \(event)")
                checked += 1
            }
        }
        #expect(checked == Kind.allCases.count * Event.allCases.count)
    }

    @Test("who started it and the outcome travel with the phase")
    func payloads() {
        guard case .executing(let byQueue)? = Phase.dispatched.after(.start) else { Issue.record(); return }
        #expect(byQueue)
        guard case .executing(let byHand)? = Phase.ready.after(.start) else { Issue.record(); return }
        #expect(!byHand)
        guard case .finishing(let finishedByQueue, _)? = Phase.executing(byQueue: true).after(.finish) else {
            Issue.record(); return
        }
        #expect(finishedByQueue)
        guard case .announcingBaseFinish(let announcedByQueue)? = Phase.executing(byQueue: true).after(.baseFinish),
            case .awaitingFinish(let awaitedByQueue)? = Phase.announcingBaseFinish(byQueue: announcedByQueue).after(.baseFinishAnnounced),
            case .finishing(let finishedAfterAwaiting, _)? = Phase.awaitingFinish(byQueue: awaitedByQueue).after(.finish),
            case .finishing(let finishedWhileAnnouncing, _)? = Phase.announcingBaseFinish(byQueue: true).after(.finish)
        else { Issue.record(); return }
        #expect(finishedAfterAwaiting)
        #expect(finishedWhileAnnouncing)
        guard case .announcing(let announced)? = Phase.finishing(byQueue: false, .cancelled).after(.processed),
            case .finished(let outcome)? = Phase.announcing(announced).after(.complete)
        else { Issue.record(); return }
        #expect(outcome.isCancelled)
    }

    @Test("a finished operation's outcome: cancellation wins over a reported failure")
    func outcomeDecision() {
        struct Boom: Error {}
        var state = OperationCore()
        state.failure = Boom()
        state.offeredCancellationReason = Boom()
        let first = state.requestCancellation()
        let second = state.requestCancellation()
        #expect(first)
        #expect(!second, "a second cancel does not announce")
        let finish = state.finish()
        #expect(finish?.completedCancellation == true, "the finish completed the announced cancellation")
        #expect(finish?.outcome.isCancelled == true)
        let again = state.finish()
        #expect(again == nil, "finishing happens once")
        let completedLate = state.completeCancellation()
        #expect(!completedLate, "the cancel thread finds it done")
        let afterFinish = state.requestCancellation()
        #expect(!afterFinish, "no cancellation after the finish")
        _ = state.complete(observersToTell: false)
        #expect(state.outcome?.isCancelled == true)
    }
}
