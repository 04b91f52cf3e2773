//! Answer-level evaluation: the chat client, the questions waiting to be sent, and the
//! scoring of each answer into its strategy's answers file.

use std::collections::HashMap;
use std::time::Instant;

use excerpt_core::EmbedError;
use excerpt_embed::ChatClient;

use super::accumulate::Acc;
use crate::answer::{exact_match, token_f1, AnswerLine, SYSTEM_PROMPT};
use crate::format::{write_jsonl_line, QueryLine};
use crate::metrics::round_to;
use crate::EvalError;

/// A question waiting to be sent: the user message for one query's context from one
/// strategy at one budget.
pub(super) struct AnswerJob {
    pub(super) acc: usize,
    pub(super) query: usize,
    pub(super) user: String,
}

/// The answer client and what it has done so far.
pub(super) struct Answerer {
    pub(super) client: ChatClient,
    pub(super) concurrency: usize,
    pub(super) pending: Vec<AnswerJob>,
    pub(super) requests: usize,
    pub(super) seconds: f64,
}

impl Answerer {
    /// Jobs gathered before a batch is sent: enough to keep every request slot busy
    /// through most of the batch.
    pub(super) fn batch_size(&self) -> usize {
        self.concurrency.saturating_mul(4).max(1)
    }

    /// Sends the pending jobs (identical prompts once), then scores each answer and
    /// appends its line to its strategy's answers file, jobs in the order queued. The
    /// first request that failed after the client's retries fails the run.
    pub(super) fn flush(
        &mut self,
        accs: &mut [Acc],
        queries: &[QueryLine],
    ) -> Result<(), EvalError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let jobs = std::mem::take(&mut self.pending);
        let mut unique: Vec<(Option<String>, String)> = Vec::new();
        let mut slot_of: HashMap<&str, usize> = HashMap::new();
        let mut slots = Vec::with_capacity(jobs.len());
        for job in &jobs {
            let slot = *slot_of.entry(job.user.as_str()).or_insert_with(|| {
                unique.push((Some(SYSTEM_PROMPT.to_string()), job.user.clone()));
                unique.len() - 1
            });
            slots.push(slot);
        }
        let t = Instant::now();
        let responses = self.client.complete_many(&unique, self.concurrency);
        self.seconds += t.elapsed().as_secs_f64();
        self.requests += unique.len();
        for (job, slot) in jobs.iter().zip(slots) {
            let (Some(acc), Some(q)) = (accs.get_mut(job.acc), queries.get(job.query)) else {
                continue;
            };
            let (Some(answers), Some(reference)) = (acc.answers.as_mut(), q.answer.as_deref())
            else {
                continue;
            };
            let response = match responses.get(slot) {
                Some(Ok(r)) => r,
                Some(Err(e)) => {
                    return Err(EvalError::Answer {
                        endpoint: self.client.endpoint().to_string(),
                        query_id: q.id.clone(),
                        strategy: acc.label.clone(),
                        budget: acc.budget,
                        message: endpoint_message(e),
                    })
                }
                None => continue,
            };
            let f1 = token_f1(&response.text, reference);
            let em = exact_match(&response.text, reference);
            let line = AnswerLine {
                query_id: q.id.clone(),
                answer: response.text.clone(),
                reference: reference.to_string(),
                f1: round_to(f1, 4),
                em,
                prompt_tokens: response.prompt_tokens,
                completion_tokens: response.completion_tokens,
            };
            write_jsonl_line(&mut answers.out, &line, &answers.path)?;
            answers.answered += 1;
            answers.f1_sum += f1;
            answers.em += usize::from(em);
            answers.prompt_tokens += response.prompt_tokens.unwrap_or(0);
            answers.completion_tokens += response.completion_tokens.unwrap_or(0);
        }
        Ok(())
    }
}

/// What the chat endpoint said, without the client's own "embedding endpoint" wording.
pub(super) fn endpoint_message(e: &EmbedError) -> String {
    match e {
        EmbedError::Remote {
            status: Some(status),
            message,
            ..
        } => format!("HTTP {status}: {message}"),
        EmbedError::Remote { message, .. } => message.clone(),
        other => other.to_string(),
    }
}

/// Whether a query has a reference answer to score against.
pub(super) fn has_reference(q: &QueryLine) -> bool {
    q.answer.as_deref().is_some_and(|a| !a.trim().is_empty())
}
