import Foundation

/// Names programs on a command line: `seed:N`, `seed:FIRST-LAST` (both included),
/// `named:NAME`, `named:all`, or `file:PATH` (programs as JSON, from ``ProgramCatalog/json(_:)``).
public enum ProgramCatalog {
    /// Programs as JSON (an array), to edit, shrink and replay.
    public static func json(_ programs: [Program]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(programs)) ?? Data(), as: UTF8.self)
    }

    public struct UnknownProgram: Error, CustomStringConvertible {
        public let argument: String
        public var description: String {
            "unknown program '\(argument)' (expected seed:N, seed:FIRST-LAST, named:NAME, named:all or file:PATH; names: \(NamedPrograms.all.map(\.identifier).joined(separator: ", ")))"
        }
    }

    public static func programs(_ argument: String, parameters: GeneratorParameters = GeneratorParameters()) throws -> [Program] {
        if argument == "named:all" { return NamedPrograms.all }
        if argument.hasPrefix("file:") {
            let data = try Data(contentsOf: URL(fileURLWithPath: String(argument.dropFirst("file:".count))))
            // Whether the start order is defined follows from the steps, whatever the file says.
            return try JSONDecoder().decode([Program].self, from: data).map { program in
                var simulation = ProgramSimulation(queue: program.queue, operations: program.operations)
                for step in program.steps { simulation.perform(step) }
                var checked = program
                checked.startOrderIsDefined =
                    simulation.startOrderIsDefined && !ProgramSimulation.escalationMayReorder(program.operations)
                return checked
            }
        }
        if argument.hasPrefix("named:") {
            guard let program = NamedPrograms.named(String(argument.dropFirst("named:".count))) else {
                throw UnknownProgram(argument: argument)
            }
            return [program]
        }
        guard argument.hasPrefix("seed:") else { throw UnknownProgram(argument: argument) }
        let bounds = argument.dropFirst("seed:".count).split(separator: "-", omittingEmptySubsequences: false)
        guard (1...2).contains(bounds.count), let first = UInt64(bounds[0]), let last = UInt64(bounds[bounds.count - 1]),
            first <= last
        else { throw UnknownProgram(argument: argument) }
        return (first...last).map { ProgramGenerator.program(seed: $0, parameters: parameters) }
    }
}
