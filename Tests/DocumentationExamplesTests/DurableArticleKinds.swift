// The kinds the durable articles declare in their first blocks
// (Sources/OperationsDurable/OperationsDurable.docc/DurableOperations.md and
// ObservingDurableOperations.md), for the blocks after those.
#if Durable

import Foundation
import OperationsDurable

struct Download: DurableOperation {
    static let kind = "download"
    func run(_ url: URL, context: DurableContext) async throws -> Data { Data() }
}
struct Filter: DurableOperation {
    static let kind = "filter"
    func run(_ download: DurableHandle<Download>, context: DurableContext) async throws -> Data { Data() }
}
struct Output: DurableOperation {
    static let kind = "output"
    func run(_ input: String, context: DurableContext) async throws -> String { input }
}
#endif
