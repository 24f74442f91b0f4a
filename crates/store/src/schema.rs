//! Table definitions shared by both backends; columns use types both databases support.

diesel::table! {
    organizations (id) {
        id -> Text,
        name -> Text,
        plan -> Text,
        image_ocr -> Bool,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    clients (id) {
        id -> Text,
        organization_id -> Text,
        name -> Text,
        scopes -> Text,
        secret_hash -> Text,
        secret_generation -> Integer,
        revoked_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    api_keys (id) {
        id -> Text,
        organization_id -> Text,
        name -> Text,
        scopes -> Text,
        secret_hash -> Text,
        created_by -> Text,
        expires_at -> Nullable<Timestamp>,
        last_used_at -> Nullable<Timestamp>,
        revoked_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
    }
}

diesel::table! {
    particles (id) {
        id -> Text,
        organization_id -> Nullable<Text>,
        slug -> Nullable<Text>,
        name -> Text,
        category -> Text,
        description -> Text,
        latest_version -> Integer,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        deleted_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    particle_versions (id) {
        id -> Text,
        particle_id -> Text,
        number -> Integer,
        content -> Text,
        token_count -> Integer,
        created_at -> Timestamp,
    }
}

diesel::table! {
    system_prompts (id) {
        id -> Text,
        organization_id -> Nullable<Text>,
        slug -> Nullable<Text>,
        name -> Text,
        description -> Text,
        enabled -> Bool,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    system_prompt_particles (association_id, valid_from) {
        association_id -> Text,
        system_prompt_id -> Text,
        particle_id -> Text,
        sort_order -> Integer,
        pinned_version_id -> Nullable<Text>,
        pinned_number -> Nullable<Integer>,
        valid_from -> Timestamp,
        valid_to -> Nullable<Timestamp>,
    }
}

diesel::table! {
    idempotency_keys (organization_id, principal, idempotency_key) {
        organization_id -> Text,
        principal -> Text,
        idempotency_key -> Text,
        fingerprint -> Text,
        response_status -> Nullable<Integer>,
        response_headers -> Nullable<Text>,
        response_body -> Nullable<Binary>,
        created_at -> Timestamp,
        expires_at -> Timestamp,
    }
}

diesel::table! {
    user_models (id) {
        id -> Text,
        organization_id -> Text,
        parent_model_id -> Text,
        display_name -> Text,
        description -> Nullable<Text>,
        system_prompt_id -> Nullable<Text>,
        system_prompt -> Nullable<Text>,
        metadata -> Text,
        enabled -> Bool,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    model_datasets (model_id, dataset_id) {
        organization_id -> Text,
        model_id -> Text,
        dataset_id -> Text,
        usage_type -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    chats (id) {
        id -> Text,
        organization_id -> Text,
        owner -> Text,
        model_id -> Text,
        base_model_id -> Text,
        system_prompt -> Nullable<Text>,
        system_prompt_id -> Nullable<Text>,
        title -> Nullable<Text>,
        status -> Nullable<Text>,
        error -> Nullable<Text>,
        deleted_at -> Nullable<Timestamp>,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    generation_runners (id) {
        id -> Text,
        started_at -> Timestamp,
        seen_at -> Timestamp,
    }
}

diesel::table! {
    running_generations (runner_id, chat_id) {
        runner_id -> Text,
        chat_id -> Text,
        organization_id -> Text,
        started_at -> Timestamp,
    }
}

diesel::table! {
    chat_messages (id) {
        id -> Text,
        chat_id -> Text,
        organization_id -> Text,
        sequence -> Integer,
        role -> Text,
        content -> Text,
        reasoning -> Nullable<Text>,
        tool_calls -> Text,
        tool_call_id -> Nullable<Text>,
        sources -> Text,
        input_tokens -> Nullable<BigInt>,
        output_tokens -> Nullable<BigInt>,
        reasoning_tokens -> Nullable<BigInt>,
        finish_reason -> Nullable<Text>,
        created_at -> Timestamp,
        attachments -> Text,
        route -> Nullable<Text>,
        cached_input_tokens -> BigInt,
        guardrails -> Nullable<Text>,
    }
}

diesel::table! {
    usage_records (id) {
        id -> Text,
        organization_id -> Text,
        principal -> Text,
        principal_kind -> Text,
        chat_id -> Text,
        message_id -> Text,
        model_id -> Text,
        parent_model_id -> Text,
        provider -> Text,
        input_tokens -> BigInt,
        output_tokens -> BigInt,
        reasoning_tokens -> BigInt,
        credits -> BigInt,
        latency_ms -> BigInt,
        finish_reason -> Text,
        created_at -> Timestamp,
        cached_input_tokens -> BigInt,
        cached -> Bool,
    }
}

diesel::table! {
    usage_hourly (organization_id, hour, model_id, shard) {
        organization_id -> Text,
        hour -> Timestamp,
        model_id -> Text,
        input_tokens -> BigInt,
        output_tokens -> BigInt,
        reasoning_tokens -> BigInt,
        credits -> BigInt,
        requests -> BigInt,
        shard -> SmallInt,
        cached_input_tokens -> BigInt,
        cached_requests -> BigInt,
    }
}

diesel::table! {
    artifacts (id) {
        id -> Text,
        organization_id -> Text,
        owner -> Text,
        chat_id -> Text,
        message_id -> Text,
        kind -> Text,
        language -> Nullable<Text>,
        title -> Text,
        identifier -> Text,
        version -> Integer,
        content -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    files (id) {
        id -> Text,
        organization_id -> Text,
        created_by -> Text,
        name -> Text,
        format -> Text,
        size -> BigInt,
        sha256 -> Text,
        status -> Text,
        progress -> Integer,
        error -> Nullable<Text>,
        chunk_count -> Integer,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        embedding_model -> Nullable<Text>,
        index_generation -> Integer,
        purpose -> Nullable<Text>,
        chunk_max_tokens -> Nullable<Integer>,
        chunk_overlap_tokens -> Nullable<Integer>,
    }
}

diesel::table! {
    index_generations (generation) {
        generation -> Integer,
        embedding_model -> Text,
        state -> Text,
        leased_by -> Nullable<Text>,
        leased_until -> Nullable<Timestamp>,
        created_at -> Timestamp,
        activated_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    file_chunks (file_id, ordinal) {
        file_id -> Text,
        ordinal -> Integer,
        text -> Text,
        token_count -> Integer,
        page -> Nullable<Integer>,
        section -> Nullable<Text>,
        char_start -> BigInt,
        char_end -> BigInt,
    }
}

diesel::table! {
    file_jobs (file_id) {
        file_id -> Text,
        attempts -> Integer,
        run_after -> Timestamp,
        leased_by -> Nullable<Text>,
        leased_until -> Nullable<Timestamp>,
        last_error -> Nullable<Text>,
        created_at -> Timestamp,
    }
}

diesel::table! {
    datasets (id) {
        id -> Text,
        organization_id -> Text,
        name -> Text,
        description -> Nullable<Text>,
        version -> BigInt,
        created_by -> Text,
        late_interaction -> Bool,
        created_at -> Timestamp,
        updated_at -> Timestamp,
        metadata -> Nullable<Text>,
        expires_after_days -> Nullable<Integer>,
        last_active_at -> Timestamp,
    }
}

diesel::table! {
    dataset_files (dataset_id, file_id) {
        dataset_id -> Text,
        file_id -> Text,
        added_at -> Timestamp,
        attributes -> Nullable<Text>,
    }
}

diesel::table! {
    dataset_file_batches (id) {
        id -> Text,
        organization_id -> Text,
        dataset_id -> Text,
        file_ids -> Text,
        created_at -> Timestamp,
        cancelled_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    batches (id) {
        id -> Text,
        organization_id -> Text,
        owner -> Text,
        created_by -> Text,
        endpoint -> Text,
        input_file_id -> Text,
        completion_window -> Text,
        metadata -> Text,
        status -> Text,
        errors -> Text,
        output_file_id -> Nullable<Text>,
        error_file_id -> Nullable<Text>,
        total -> Integer,
        completed -> Integer,
        failed -> Integer,
        created_at -> Timestamp,
        in_progress_at -> Nullable<Timestamp>,
        expires_at -> Timestamp,
        finalizing_at -> Nullable<Timestamp>,
        completed_at -> Nullable<Timestamp>,
        failed_at -> Nullable<Timestamp>,
        expired_at -> Nullable<Timestamp>,
        cancelling_at -> Nullable<Timestamp>,
        cancelled_at -> Nullable<Timestamp>,
        leased_by -> Nullable<Text>,
        leased_until -> Nullable<Timestamp>,
    }
}

diesel::table! {
    batch_results (batch_id, line) {
        batch_id -> Text,
        line -> Integer,
        custom_id -> Text,
        request_id -> Text,
        status_code -> Nullable<Integer>,
        body -> Text,
    }
}

diesel::table! {
    dataset_snapshots (dataset_id, version) {
        dataset_id -> Text,
        version -> BigInt,
        created_at -> Timestamp,
    }
}

diesel::table! {
    snapshot_files (dataset_id, version, file_id) {
        dataset_id -> Text,
        version -> BigInt,
        file_id -> Text,
        sha256 -> Text,
    }
}

diesel::table! {
    webhooks (id) {
        id -> Text,
        organization_id -> Text,
        url -> Text,
        events -> Text,
        description -> Nullable<Text>,
        secret -> Text,
        created_by -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    webhook_deliveries (id) {
        id -> Text,
        webhook_id -> Text,
        organization_id -> Text,
        event_id -> Text,
        event -> Text,
        body -> Text,
        status -> Text,
        attempts -> Integer,
        next_attempt_at -> Nullable<Timestamp>,
        leased_by -> Nullable<Text>,
        leased_until -> Nullable<Timestamp>,
        last_status_code -> Nullable<Integer>,
        last_error -> Nullable<Text>,
        created_at -> Timestamp,
        delivered_at -> Nullable<Timestamp>,
    }
}

diesel::table! {
    audit_events (id) {
        id -> Text,
        organization_id -> Nullable<Text>,
        occurred_at -> Timestamp,
        actor_kind -> Text,
        actor_id -> Nullable<Text>,
        action -> Text,
        resource_type -> Text,
        resource_id -> Nullable<Text>,
        address -> Nullable<Text>,
        request_id -> Nullable<Text>,
    }
}

diesel::table! {
    mcp_servers (id) {
        id -> Text,
        organization_id -> Text,
        name -> Text,
        url -> Text,
        header_names -> Text,
        headers -> Binary,
        allowed_tools -> Nullable<Text>,
        timeout_ms -> Integer,
        tools -> Nullable<Text>,
        tools_fetched_at -> Nullable<Timestamp>,
        created_by -> Text,
        created_at -> Timestamp,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    model_mcp_servers (organization_id, model_id, server_id) {
        organization_id -> Text,
        model_id -> Text,
        server_id -> Text,
        created_at -> Timestamp,
    }
}

diesel::table! {
    guardrail_policies (organization_id, scope, model_id) {
        organization_id -> Text,
        scope -> Text,
        model_id -> Text,
        spec -> Text,
        updated_at -> Timestamp,
        updated_by -> Text,
    }
}

diesel::table! {
    credential_limits (organization_id, credential) {
        organization_id -> Text,
        credential -> Text,
        models -> Nullable<Text>,
        budget_credits -> Nullable<BigInt>,
        budget_period -> Nullable<Text>,
        budget_on_spent -> Nullable<Text>,
        updated_at -> Timestamp,
    }
}

diesel::table! {
    response_cache_policies (organization_id, model_id) {
        organization_id -> Text,
        model_id -> Text,
        spec -> Text,
        updated_at -> Timestamp,
        updated_by -> Text,
    }
}

diesel::joinable!(particle_versions -> particles (particle_id));
diesel::joinable!(system_prompt_particles -> particles (particle_id));
diesel::joinable!(system_prompt_particles -> system_prompts (system_prompt_id));

diesel::joinable!(file_chunks -> files (file_id));
diesel::joinable!(file_jobs -> files (file_id));
diesel::joinable!(dataset_files -> files (file_id));
diesel::joinable!(dataset_files -> datasets (dataset_id));
diesel::joinable!(snapshot_files -> files (file_id));
diesel::joinable!(dataset_snapshots -> datasets (dataset_id));
diesel::joinable!(webhook_deliveries -> webhooks (webhook_id));
diesel::joinable!(batch_results -> batches (batch_id));

diesel::allow_tables_to_appear_in_same_query!(
    files,
    file_chunks,
    file_jobs,
    datasets,
    dataset_files,
    dataset_file_batches,
    dataset_snapshots,
    snapshot_files,
    index_generations,
);

diesel::allow_tables_to_appear_in_same_query!(batches, batch_results);

diesel::allow_tables_to_appear_in_same_query!(
    particles,
    particle_versions,
    system_prompts,
    system_prompt_particles,
);

diesel::allow_tables_to_appear_in_same_query!(webhooks, webhook_deliveries);

diesel::joinable!(model_mcp_servers -> mcp_servers (server_id));
diesel::allow_tables_to_appear_in_same_query!(mcp_servers, model_mcp_servers);

diesel::allow_tables_to_appear_in_same_query!(chats, running_generations, generation_runners);
