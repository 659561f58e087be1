// The JSON the dashboard's routes return and its live feed pushes: plain values, encoded
// with ISO 8601 dates and sorted keys.
#if Dashboard
import Foundation
import Operations
import OperationsDurable

/// What every viewer is sent at each refresh: the overview, read once for all of them.
struct OverviewJSON: Codable, Sendable, Equatable {
    /// Counts the refreshes made since the dashboard started (each is one set of reads).
    var refresh: Int
    var generatedAt: Date
    /// Nil when the dashboard serves in-process queues only.
    var store: StoreJSON?
    var local: [LocalQueueJSON]
}

struct StoreJSON: Codable, Sendable, Equatable {
    /// The store's description (database and address, never a password).
    var name: String
    /// Set when the last reads failed: the page says so and keeps the last good values.
    var error: String?
    var windowMinutes: Int
    var queues: [QueueJSON]
    var workers: [DurableWorkerSummary]
    var failures: [DurableFailureGroup]
}

struct QueueJSON: Codable, Sendable, Equatable {
    var name: String
    var counts: DurableOperationCounts
    var limit: Int?
    var suspended: Bool
    /// Operations finished in each of the last minutes, oldest first.
    var finishedPerMinute: [Int]
}

struct OperationPageJSON: Codable, Sendable {
    var queue: String
    var state: DurableState
    var operations: [DurableOperationSummary]
    /// The `after` value for the next page; nil on the last one.
    var next: DurableOperationID?
}

struct OperationJSON: Codable, Sendable {
    var id: DurableOperationID
    var queue: String
    var kind: String
    var state: DurableState
    var key: String?
    var priority: Int
    var attempt: Int
    var maximumAttempts: Int
    /// The input as stored, and parsed when it is JSON (nil otherwise).
    var input: String
    var inputJSON: JSONValue?
    var output: String?
    var outputJSON: JSONValue?
    var error: String?
    var cancelReason: String?
    var progressCompleted: Int64
    var progressTotal: Int64
    var notBefore: Date
    var enqueuedAt: Date?
    var finishedAt: Date?
    var worker: String?
    var waitDescription: String
    var attempts: [DurableAttempt]
    var dependencies: [DurableOperationSummary]
    var dependents: [DurableOperationSummary]

    init(_ details: DurableOperationDetails, waitDescription: String) {
        let record = details.record
        id = record.id
        queue = record.queue
        kind = record.kind
        state = record.state
        key = details.key
        priority = details.priority
        attempt = record.attempt
        maximumAttempts = record.maximumAttempts
        input = details.input
        inputJSON = JSONValue(parsing: details.input)
        output = record.output
        outputJSON = record.output.flatMap(JSONValue.init(parsing:))
        error = record.error
        cancelReason = record.cancelReason
        progressCompleted = record.progressCompleted
        progressTotal = record.progressTotal
        notBefore = record.notBefore
        enqueuedAt = details.enqueuedAt
        finishedAt = details.finishedAt
        worker = details.worker
        self.waitDescription = waitDescription
        attempts = record.attempts
        dependencies = details.dependencies
        dependents = details.dependents
    }
}

struct SearchJSON: Codable, Sendable {
    var query: String
    var operations: [DurableOperationSummary]
}

struct LocalQueueJSON: Codable, Sendable, Equatable {
    var name: String
    var limit: Int
    var suspended: Bool
    var operationCount: Int
    /// `OperationQueue.waitDescription`, line by line.
    var waitDescription: [String]
    /// The recent operations, oldest first: what ran when, and what waits.
    var timeline: [TimelineEntryJSON]
    /// The stall reports that named this queue, newest last.
    var stalls: [String]
}

struct TimelineEntryJSON: Codable, Sendable, Equatable {
    var name: String
    /// Seconds since the dashboard began watching the queue.
    var enqueued: Double
    var started: Double?
    var finished: Double?
    var slot: Int?
    var cancelled: Bool
}

struct ErrorJSON: Codable, Sendable {
    var error: String
}

struct ActionJSON: Codable, Sendable {
    var done: String
}

/// Any JSON value: an operation's input and output shown as they were stored.
indirect enum JSONValue: Codable, Sendable, Equatable {
    case null, bool(Bool), number(Double), string(String), array([JSONValue]), object([String: JSONValue])

    init?(parsing text: String) {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else { return nil }
        self = value
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

enum DashboardCoding {
    static func encode(_ value: some Encodable) -> Data {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        // The values are plain: encoding cannot fail.
        return (try? encoder.encode(value)) ?? Data("{}".utf8)
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }
}
#endif
