-- 0019_unparsed_reasons: the unparsed judgments by their reason, so that the report counts those
-- of one kind (outputs cut at the token limit, say) from the few it names instead of joining
-- every verdict in force to its judgment. Applied once, never edited.

CREATE INDEX judgments_unparsed ON judgments (unparsed_reason) WHERE status = 'unparsed';
