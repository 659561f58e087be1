// How a durable source hands its events to handlers: a cancelled handler is not called
// again, and a handler that does not return does not make the waiting events grow for ever.
#if PostgreSQL && SQLite

import Foundation
@_spi(Engine) import Operations
@testable import OperationsDurable
import OperationsTestSupport
import Testing

@Suite("Delivery of durable events", .timeLimit(.minutes(2)))
struct DurableEventDeliveryTests {
    private func draft(_ number: Int64) -> DurableEvent.Draft {
        DurableEvent.Draft(
            kind: .enqueued, operation: DurableOperationID(rawValue: number), operationKind: "echo", queue: "default")
    }

    @Test("a handler whose subscription was cancelled while another handler ran is not called with that event", arguments: [true, false])
    func cancelledHandlerIsNotCalledAgain(onOwnQueue: Bool) async throws {
        let broadcaster = DurableEventBroadcaster(deliveringOnOwnQueue: onOwnQueue, source: "test delivery")
        // The first handler holds the delivery of the first event until the gate opens.
        let holding = DispatchSemaphore(value: 0)
        let entered = TestGate()
        let firstSaw = Shared<[UInt64]>([])
        let first = broadcaster.addHandler { event in
            if event.sequence == 0 {
                entered.open()
                holding.wait()
            }
            firstSaw.update { $0.append(event.sequence) }
        }
        let secondSaw = Shared<[UInt64]>([])
        let second = broadcaster.addHandler { event in secondSaw.update { $0.append(event.sequence) } }
        let delivering = Thread { broadcaster.report(draft(1)) }
        delivering.start()
        try await within(60, "the first handler to be called") { await entered.wait() }
        second.cancel()
        holding.signal()
        broadcaster.report(draft(2))
        try await pollUntil(60, "both events delivered to the first handler") { firstSaw.value == [0, 1] }
        #expect(secondSaw.value == [], "called after its subscription was cancelled")
        first.cancel()
    }

    @Test("while a handler does not return, the waiting events are bounded: the oldest are dropped, a warning says so, and the sequence shows the gap")
    func stalledHandlerBoundsWaitingEvents() async throws {
        let source = "stalled handler \(UUID().uuidString.prefix(8))"
        let broadcaster = DurableEventBroadcaster(deliveringOnOwnQueue: true, source: source, maximumWaiting: 8)
        let holding = DispatchSemaphore(value: 0)
        let entered = TestGate()
        let seen = Shared<[UInt64]>([])
        let subscription = broadcaster.addHandler { event in
            if event.sequence == 0 {
                entered.open()
                holding.wait()
            }
            seen.update { $0.append(event.sequence) }
        }
        let warnings = Shared<[String]>([])
        let previous = OperationDiagnostic.handler
        OperationDiagnostic.handler = { diagnostic in
            guard diagnostic.message.contains(source) else { return previous(diagnostic) }
            warnings.update { $0.append(diagnostic.message) }
        }
        defer { OperationDiagnostic.handler = previous }
        broadcaster.report(draft(0))
        try await within(60, "the handler to be called") { await entered.wait() }
        for number in 1...100 { broadcaster.report(draft(Int64(number))) }
        #expect(broadcaster.waitingCount <= 8)
        holding.signal()
        try await pollUntil(60, "the newest event delivered") { seen.value.last == 100 }
        let delivered = seen.value
        #expect(delivered.count <= 1 + 8, "\(delivered)")
        #expect(delivered == delivered.sorted())
        #expect(delivered.first == 0)
        #expect(warnings.value.count == 1, "\(warnings.value)")
        #expect(warnings.value.first?.contains("dropped") == true, "\(warnings.value)")
        subscription.cancel()
    }
}
#endif
