# The Swift files scripts/format formats and scripts/check-format lints, NUL-separated: the tracked .swift files of
# Sources, Tests, Examples, Benchmarks and Package.swift (`git ls-files`: no build folder, nothing untracked).
# Sourced by both, from the checkout's root.
swift_files() {
    git ls-files -z -- Sources Tests Examples Benchmarks Package.swift | while IFS= read -r -d '' file; do
        case "$file" in
            .build*/* | */.build*/*) ;;
            # Shown verbatim by the README and the tutorial (DocumentationTests), aligned comments included.
            Examples/FirstProgram/main.swift | Tests/StructPostgresIntegrationTests/FirstProgramTests.swift) ;;
            *.swift) if [ -f "$file" ]; then printf '%s\0' "$file"; fi ;;
        esac
    done
}
