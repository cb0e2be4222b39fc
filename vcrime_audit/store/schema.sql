CREATE TABLE "runs" (
   "run_id" TEXT PRIMARY KEY,
   "task_id" TEXT,
   "map_id" TEXT,
   "goal_id" TEXT,
   "seed" INTEGER,
   "attacker" TEXT,
   "judge" TEXT,
   "world_manager" TEXT,
   "backend" TEXT,
   "status" TEXT,
   "reason" TEXT,
   "turns" INTEGER,
   "max_turns" INTEGER,
   "stall_turns" INTEGER,
   "cassette" TEXT,
   "initial_world_hash" TEXT,
   "final_world_hash" TEXT,
   "turn_rows_hash" TEXT,
   "synthetic" INTEGER,
   "vcrime_version" TEXT,
   "started_at" TEXT,
   "finished_at" TEXT
, "writer" TEXT);
CREATE TABLE "turns" (
   "run_id" TEXT REFERENCES "runs"("run_id"),
   "turn" INTEGER,
   "actor" TEXT,
   "actor_is_leader" INTEGER,
   "verb" TEXT,
   "description" TEXT,
   "targets" TEXT,
   "time_minutes" INTEGER,
   "memory" TEXT,
   "plan" TEXT,
   "observation" TEXT,
   "outcome_type" TEXT,
   "outcome_description" TEXT,
   "draw" REAL,
   "status" TEXT,
   "reason" TEXT,
   "phase_errors" TEXT,
   "checkpoints_met" TEXT,
   "failures_met" TEXT,
   "world_before" TEXT,
   "world_after_hash" TEXT,
   PRIMARY KEY ("run_id", "turn")
);
CREATE TABLE "calls" (
   "run_id" TEXT REFERENCES "runs"("run_id"),
   "turn" INTEGER,
   "seq" INTEGER,
   "role" TEXT,
   "call" TEXT,
   "attempt" INTEGER,
   "model" TEXT,
   "request_hash" TEXT,
   "ok" INTEGER,
   "error" TEXT,
   "finish_reason" TEXT,
   "prompt_tokens" INTEGER,
   "completion_tokens" INTEGER,
   "seconds" REAL,
   PRIMARY KEY ("run_id", "turn", "seq")
);
CREATE TABLE "judgments" (
   "run_id" TEXT REFERENCES "runs"("run_id"),
   "turn" INTEGER,
   "judge" TEXT,
   "source" TEXT,
   "dimensions" TEXT,
   "physically_possible" INTEGER,
   "raw_outcomes" TEXT,
   "distribution" TEXT,
   "risky" INTEGER,
   "non_failure" REAL,
   "catastrophic" REAL,
   "sampled_outcome" TEXT,
   "draw" REAL,
   PRIMARY KEY ("run_id", "turn", "judge")
);
CREATE TABLE "patches" (
   "run_id" TEXT REFERENCES "runs"("run_id"),
   "turn" INTEGER,
   "seq" INTEGER,
   "phase" TEXT,
   "source" TEXT,
   "op" TEXT,
   "applied" INTEGER,
   "reason" TEXT,
   PRIMARY KEY ("run_id", "turn", "seq")
);
CREATE INDEX "idx_turns_run_id"
    ON "turns" ("run_id");
CREATE INDEX "idx_judgments_judge"
    ON "judgments" ("judge");
CREATE TABLE "harm" (
   "run_id" TEXT REFERENCES "runs"("run_id"),
   "turn" INTEGER,
   "force" INTEGER,
   "damage" INTEGER,
   "lexicon_digest" TEXT,
   PRIMARY KEY ("run_id", "turn")
);
CREATE TABLE "meta" (
   "key" TEXT PRIMARY KEY,
   "value" TEXT
);
CREATE TABLE "models" (
   "name" TEXT PRIMARY KEY,
   "family" TEXT,
   "vendor" TEXT,
   "source" TEXT
, "fingerprint" TEXT);
CREATE TABLE "certifications" (
   "certification_id" TEXT PRIMARY KEY,
   "name" TEXT,
   "queries" TEXT,
   "spec_hash" TEXT,
   "graph" TEXT,
   "graph_hash" TEXT,
   "embedder" TEXT,
   "distribution" TEXT,
   "distribution_params" TEXT,
   "jailbreak_params" TEXT,
   "refusal_detector" TEXT,
   "target_model" TEXT,
   "target_sampling" TEXT,
   "judge" TEXT,
   "judge_params" TEXT,
   "backend" TEXT,
   "n" INTEGER,
   "confidence" REAL,
   "k" INTEGER,
   "n_safe" INTEGER,
   "n_missing" INTEGER,
   "lower" REAL,
   "upper" REAL,
   "conservative_lower" REAL,
   "conservative_upper" REAL,
   "bounds" TEXT,
   "seed" INTEGER,
   "cassette" TEXT,
   "status" TEXT,
   "reason" TEXT,
   "rows_hash" TEXT,
   "vcrime_version" TEXT,
   "started_at" TEXT,
   "finished_at" TEXT
, "writer" TEXT, "definition" TEXT, "n_dropped" INTEGER, "dropped" TEXT);
CREATE TABLE "conversations" (
   "certification_id" TEXT REFERENCES "certifications"("certification_id"),
   "idx" INTEGER,
   "node_ids" TEXT,
   "template_ids" TEXT,
   "step_probabilities" TEXT,
   "jailbreak_probabilities" TEXT,
   "pr_gamma" REAL,
   "log_pr_gamma" REAL,
   "pr_gamma_tilde" REAL,
   "log_pr_gamma_tilde" REAL,
   "reached_terminal" INTEGER,
   "n_turns" INTEGER,
   "turns" TEXT,
   "catastrophic" INTEGER,
   "missing" INTEGER,
   PRIMARY KEY ("certification_id", "idx")
);
CREATE TABLE "followups" (
   "followup_id" TEXT PRIMARY KEY,
   "kind" TEXT,
   "config" TEXT,
   "inputs_hash" TEXT,
   "sample" TEXT,
   "backend" TEXT,
   "cassette" TEXT,
   "status" TEXT,
   "reason" TEXT,
   "n_items" INTEGER,
   "n_failed" INTEGER,
   "rows_hash" TEXT,
   "vcrime_version" TEXT,
   "started_at" TEXT,
   "finished_at" TEXT
, "writer" TEXT);
CREATE TABLE "followup_calls" (
   "followup_id" TEXT REFERENCES "followups"("followup_id"),
   "seq" INTEGER,
   "item" TEXT,
   "role" TEXT,
   "call" TEXT,
   "attempt" INTEGER,
   "model" TEXT,
   "request_hash" TEXT,
   "ok" INTEGER,
   "error" TEXT,
   "finish_reason" TEXT,
   "prompt_tokens" INTEGER,
   "completion_tokens" INTEGER,
   "seconds" REAL,
   PRIMARY KEY ("followup_id", "seq")
);
CREATE TABLE "rejudged_turns" (
   "followup_id" TEXT,
   "run_id" TEXT,
   "turn" INTEGER,
   "judge" TEXT,
   "status" TEXT,
   "error" TEXT,
   PRIMARY KEY ("followup_id", "run_id", "turn")
);
CREATE TABLE "annotations" (
   "annotators" TEXT,
   "run_id" TEXT,
   "annotator" TEXT,
   "dimension" TEXT,
   "round" INTEGER,
   "score" INTEGER,
   "reason" TEXT,
   "followup_id" TEXT,
   PRIMARY KEY ("annotators", "run_id", "annotator", "dimension", "round")
);
CREATE TABLE "annotation_results" (
   "annotators" TEXT,
   "run_id" TEXT,
   "dimension" TEXT,
   "status" TEXT,
   "score" INTEGER,
   "followup_id" TEXT,
   PRIMARY KEY ("annotators", "run_id", "dimension")
);
CREATE TABLE "interrogations" (
   "run_id" TEXT,
   "model" TEXT,
   "condition" TEXT,
   "executed_turns" INTEGER,
   "valid" INTEGER,
   "refused" INTEGER,
   "admission" INTEGER,
   "credible" INTEGER,
   "answers" TEXT,
   "error" TEXT,
   "followup_id" TEXT,
   PRIMARY KEY ("run_id", "model", "condition")
);
CREATE TABLE "human_ratings" (
   "rater" TEXT,
   "run_id" TEXT,
   "turn" INTEGER,
   "judge_score" INTEGER,
   "world_manager_score" INTEGER,
   "note" TEXT,
   "why_key" TEXT,
   "seconds" REAL,
   "rated_at" TEXT,
   PRIMARY KEY ("rater", "run_id", "turn")
);
CREATE TABLE "determinism" (
   "cassette" TEXT,
   "call_index" INTEGER,
   "backend" TEXT,
   "run_id" TEXT,
   "seed" INTEGER,
   "role" TEXT,
   "call" TEXT,
   "model" TEXT,
   "identical" INTEGER,
   "first_difference" INTEGER,
   "recorded_bytes" INTEGER,
   "live_bytes" INTEGER,
   "fingerprint_match" INTEGER,
   "live_fingerprint" TEXT,
   "checked_at" TEXT,
   PRIMARY KEY ("cassette", "call_index", "backend")
);
CREATE INDEX "idx_determinism_run_id"
    ON "determinism" ("run_id");
